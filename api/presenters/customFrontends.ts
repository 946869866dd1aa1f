import type { CustomFrontendView, DnsRecords } from '../../domain/commands/customFrontends.js';
import { iso } from './platform.js';

export const presentCustomFrontend = ({ frontend: f, authProviderIds }: CustomFrontendView) => ({
  id: f.id,
  hubId: f.hubId,
  hostname: f.hostname,
  domainName: f.domainName,
  frontendId: f.frontendId,
  status: f.status,
  authProviderIds,
  ...((f.status === 'PENDING' || f.status === 'ERROR') && f.dnsMessage ? { statusMessage: f.dnsMessage } : {}),
  ...(f.certificateExpiresAt ? { certificateExpiresAt: iso(f.certificateExpiresAt) } : {}),
  createdAt: iso(f.createdAt),
  createdBy: f.createdBy,
});

export const presentDnsRecords = (r: DnsRecords) => r;
