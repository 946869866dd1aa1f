import { QueryTypes } from 'sequelize';
import { config } from '../../shared/config.js';
import { db } from '../../shared/db.js';
import { enqueue } from '../jobs/enqueue.js';
import { encryptSecret } from '../../shared/secrets.js';
import { issueFromLocalCa } from './frontendCertificates.js';

export const ENSURE_EDGE_CERTIFICATES_JOB = 'frontends.ensureEdgeCertificates';

/** The domain of a frontend's URL template: `https://{token}.share.example.com` -> `share.example.com`. */
function templateDomain(urlTemplate: string): string | undefined {
  const match = /^[a-z]+:\/\/\{token\}\.([^/:]+)/i.exec(urlTemplate);
  return match ? match[1].toLowerCase() : undefined;
}

/**
 * Job (worker start, a new standard frontend, the daily clock): every standard frontend's domain has a wildcard
 * certificate from the service's own frontend CA, renewed HUB_CERTIFICATE_RENEW_BEFORE_DAYS before it expires. The
 * edge serves it by SNI (unless the operator gave HUB_EDGE_TLS_CERT_FILE) and picks up a renewal from the change
 * notification of edge_certificates.
 */
export async function ensureEdgeCertificates(): Promise<Record<string, unknown>> {
  const rows = await db().query<{ url_template: string }>(`SELECT url_template FROM frontends WHERE hub_id IS NULL AND active`, { type: QueryTypes.SELECT });
  const domains = [...new Set(rows.map((r) => templateDomain(r.url_template)).filter((d): d is string => Boolean(d)))];
  if (!domains.length) return { domains, issued: [] };
  const renewBefore = new Date(Date.now() + config().certificateRenewBeforeDays * 86_400_000);
  const current = await db().query<{ domain: string; not_after: Date }>(`SELECT domain, not_after FROM edge_certificates WHERE domain IN (:domains)`, {
    replacements: { domains },
    type: QueryTypes.SELECT,
  });
  const fresh = new Set(current.filter((c) => new Date(c.not_after) > renewBefore).map((c) => c.domain));
  const issued: string[] = [];
  for (const domain of domains.filter((d) => !fresh.has(d))) {
    const certificate = await issueFromLocalCa(domain);
    await db().query(
      `INSERT INTO edge_certificates (domain, certificate_pem, private_key_sealed, issuer, not_after)
       VALUES (:domain, :pem, :key, :issuer, :notAfter)
       ON CONFLICT (domain) DO UPDATE SET certificate_pem = EXCLUDED.certificate_pem, private_key_sealed = EXCLUDED.private_key_sealed,
         issuer = EXCLUDED.issuer, not_after = EXCLUDED.not_after, updated_at = now()`,
      {
        replacements: {
          domain,
          pem: certificate.certificatePem,
          key: encryptSecret(certificate.privateKeyPem),
          issuer: certificate.issuer,
          notAfter: certificate.notAfter,
        },
      },
    );
    issued.push(domain);
  }
  return { domains, issued };
}

export const enqueueEdgeCertificates = (createdBy: string) => enqueue({ type: ENSURE_EDGE_CERTIFICATES_JOB, hubId: null, resourceType: 'frontend', createdBy });

/**
 * The CA that signs the edge's certificates for standard frontends (PEM), for clients to verify the edge without
 * `-k`; undefined when the edge serves the operator's own certificate files (their issuer is the operator's).
 */
export async function frontendCaPem(): Promise<string | undefined> {
  if (config().edge.tlsCertFile) return undefined;
  const rows = await db().query<{ certificate_pem: string }>(`SELECT certificate_pem FROM frontend_issuers ORDER BY created_at`, { type: QueryTypes.SELECT });
  return rows.length ? rows.map((r) => r.certificate_pem.trim() + '\n').join('') : undefined;
}
