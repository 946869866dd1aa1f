import type { InferAttributes } from 'sequelize';
import type { TokenRecord } from '../../domain/commands/certificateRequestTokens.js';
import type { ClientCertificate } from '../../domain/models/ClientCertificate.js';
import type { EnrollmentJwtRecord } from '../../shared/pki/enrollmentJwt.js';
import { iso } from './platform.js';

export const presentToken = (t: TokenRecord) => ({
  id: t.id,
  name: t.name,
  hubId: t.hubId,
  token: t.token,
  commonName: t.commonName,
  organization: t.organization,
  organizationalUnit: t.organizationalUnit,
  validYears: t.validYears,
  expiresAt: iso(t.expiresAt),
  createdAt: iso(t.createdAt),
  createdBy: t.createdBy,
});

export const presentDeleted = (r: { id: string; name: string; hubId: string }, deletedBy: string) => ({
  id: r.id,
  name: r.name,
  hubId: r.hubId,
  deletedAt: new Date().toISOString(),
  deletedBy,
});

export const presentEnrollmentJwt = (r: EnrollmentJwtRecord) => ({
  hubId: r.hubId,
  certificateRequestTokenId: r.certificateRequestTokenId,
  jwt: r.jwt,
  url: r.url,
  expiresAt: iso(r.expiresAt),
});

/** List items and create answers: no value. */
export const presentCertificateSummary = (c: Pick<ClientCertificate, 'id' | 'name' | 'hubId' | 'createdAt' | 'createdBy'>) => ({
  id: c.id,
  name: c.name,
  hubId: c.hubId,
  createdAt: iso(c.createdAt),
  createdBy: c.createdBy,
});

/** Get-by-id (and enrollment answers): the certificate PEM as `value`, its issuers as `chain`. */
export const presentCertificate = (c: InferAttributes<ClientCertificate> & { chainPem?: string | null }) => ({
  ...presentCertificateSummary(c),
  value: c.certificatePem,
  chain: c.chainPem ?? null,
  subject: c.subject,
  fingerprintSha256: c.fingerprintSha256,
  serialNumber: c.serialNumber,
  notBefore: iso(c.notBefore),
  notAfter: iso(c.notAfter),
});
