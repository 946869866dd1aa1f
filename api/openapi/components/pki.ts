/** PKI: certificate request tokens, enrollment, client certificates. */
import { z } from 'zod';
import { id, timestamp, nullableTimestamp, obj } from './base.js';

export const CertificateRequestToken = obj({
  id,
  name: z.string(),
  hubId: id,
  token: z.string(),
  commonName: z.string().nullable(),
  organization: z.string().nullable(),
  organizationalUnit: z.string().nullable(),
  validYears: z.number().int(),
  expiresAt: nullableTimestamp,
  createdAt: nullableTimestamp,
  createdBy: z.string(),
}).meta({ id: 'CertificateRequestToken' });

export const Deleted = obj({ id, name: z.string(), hubId: id, deletedAt: timestamp, deletedBy: z.string() }).meta({ id: 'Deleted' });

export const EnrollmentJwt = obj({ hubId: id, certificateRequestTokenId: id, jwt: z.string(), url: z.string(), expiresAt: nullableTimestamp }).meta({
  id: 'EnrollmentJwt',
});

const certificateSummaryShape = { id, name: z.string(), hubId: id, createdAt: nullableTimestamp, createdBy: z.string() };

export const ClientCertificateSummary = obj(certificateSummaryShape).meta({ id: 'ClientCertificateSummary' });

export const ClientCertificate = obj({
  ...certificateSummaryShape,
  value: z.string().meta({ description: 'the certificate, PEM' }),
  chain: z.string().nullable().meta({ description: 'its issuing certificates, PEM' }),
  subject: z.string(),
  fingerprintSha256: z.string(),
  serialNumber: z.string(),
  notBefore: nullableTimestamp,
  notAfter: nullableTimestamp,
}).meta({ id: 'ClientCertificate' });

export const EnrollmentViolations = z
  .array(z.unknown())
  .meta({ id: 'EnrollmentViolations', description: 'with `X-Validate: true`: what an enrollment would refuse (empty when it would succeed)' });
