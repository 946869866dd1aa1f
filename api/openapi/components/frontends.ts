/** Auth providers and custom frontends. */
import { z } from 'zod';
import { id, timestamp, nullableTimestamp, obj } from './base.js';

export const AuthProvider = obj({
  id,
  hubId: id,
  name: z.string(),
  type: z.string(),
  config: obj({ clientId: z.string(), issuerUrl: z.string().nullable().optional(), scopes: z.array(z.string()) }),
  emailPatterns: z.array(z.string()),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'AuthProvider', description: '`config.clientSecret` is write-only and never returned.' });

export const CustomFrontend = obj({
  id,
  hubId: id,
  hostname: z.string(),
  domainName: z.string(),
  frontendId: id,
  status: z.string(),
  authProviderIds: z.array(id),
  statusMessage: z.string().optional(),
  certificateExpiresAt: timestamp.optional(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
}).meta({ id: 'CustomFrontend' });

export const DnsRecords = obj({
  hubId: id,
  customFrontendId: id,
  domainName: z.string(),
  aRecord: obj({ name: z.string(), ipAddress: z.array(z.string()) }),
  cnameRecords: z.array(obj({ name: z.string(), value: z.string() })),
}).meta({ id: 'DnsRecords' });
