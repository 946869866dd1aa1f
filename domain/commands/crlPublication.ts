/**
 * The worker's part of revocation checking (it holds the CA keys): signing each CA's CRL and making each hub CA's
 * delegated OCSP responder. The web process only reads what this writes (pkiPublication.ts, ocspResponder.ts).
 */
import { generateKeyPairSync } from 'node:crypto';
import { QueryTypes } from 'sequelize';
import { config } from '../../shared/config.js';
import { db } from '../../shared/db.js';
import { CertificateAuthority } from '../models/CertificateAuthority.js';
import { encryptSecret } from '../../shared/secrets.js';
import { certificatePem, issueCertificate, publicKeyInfo, type Signer } from '../../shared/pki/certificates.js';
import { buildCrl } from '../../shared/pki/crl.js';
import { buildName, OID } from '../../shared/pki/names.js';
import { BACKDATE_MS, hubCa, signerOf } from './certificateAuthorities.js';
import { updateWindow } from './revocations.js';

const DAY_MS = 24 * 3600 * 1000;
/** A responder certificate lives 90 days and is replaced once less than 30 days (or two refresh periods) are left. */
const RESPONDER_VALIDITY_MS = 90 * DAY_MS;
const responderRenewBeforeMs = () => Math.max(30 * DAY_MS, 2 * config().crlRefreshMs);

/** Makes the hub CA's OCSP responder (key sealed like the CA keys) when it has none or its certificate is due. */
async function ensureResponder(ca: CertificateAuthority, signer: Signer): Promise<boolean> {
  const [current] = (await db().query('SELECT not_after AS "notAfter" FROM ocsp_responders WHERE ca_id = :caId', {
    replacements: { caId: ca.id },
    type: QueryTypes.SELECT,
  })) as { notAfter: Date }[];
  if (current && current.notAfter.getTime() - Date.now() > responderRenewBeforeMs()) return false;
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const now = Date.now();
  const notAfter = new Date(Math.min(now + RESPONDER_VALIDITY_MS, ca.notAfter.getTime()));
  const { der } = await issueCertificate({
    subject: buildName([
      [OID.organization, 'edgehub'],
      [OID.organizationalUnit, `hub ${ca.hubId}`],
      [OID.commonName, 'edgehub OCSP Responder'],
    ]),
    publicKey: publicKeyInfo(publicKey.export({ format: 'der', type: 'spki' })),
    issuer: signer,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter,
    profile: { kind: 'ocsp' },
  });
  await db().query(
    `INSERT INTO ocsp_responders (ca_id, certificate_pem, private_key_sealed, not_after) VALUES (:caId, :pem, :sealed, :notAfter)
     ON CONFLICT (ca_id) DO UPDATE SET certificate_pem = EXCLUDED.certificate_pem, private_key_sealed = EXCLUDED.private_key_sealed,
       not_after = EXCLUDED.not_after, created_at = now()`,
    {
      replacements: { caId: ca.id, pem: certificatePem(der), sealed: encryptSecret(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string), notAfter },
      type: QueryTypes.INSERT,
    },
  );
  return true;
}

interface RevokedRow {
  serialNumber: string;
  revokedAt: Date;
  reasonCode: number;
}

/** Writes the next CRL when the current one is still `previous` (0: none yet); false when another job came first. */
async function writeCrl(caId: string, previous: number, der: Buffer, window: ReturnType<typeof updateWindow>, count: number): Promise<boolean> {
  const rows = await db().query(
    `INSERT INTO certificate_revocation_lists (ca_id, crl_number, this_update, next_update, revoked_count, der)
     VALUES (:caId, :next, :thisUpdate, :nextUpdate, :count, :der)
     ON CONFLICT (ca_id) DO UPDATE SET crl_number = EXCLUDED.crl_number, this_update = EXCLUDED.this_update,
       next_update = EXCLUDED.next_update, revoked_count = EXCLUDED.revoked_count, der = EXCLUDED.der
     WHERE certificate_revocation_lists.crl_number = :previous
     RETURNING crl_number`,
    { replacements: { caId, next: previous + 1, previous, count, der, ...window }, type: QueryTypes.SELECT },
  );
  return rows.length === 1;
}

const countRevocations = async (caId: string) =>
  Number(
    (
      (await db().query('SELECT count(*) AS n FROM certificate_revocations WHERE ca_id = :caId', { replacements: { caId }, type: QueryTypes.SELECT })) as {
        n: string;
      }[]
    )[0].n,
  );

/**
 * Signs the CA's CRL anew with every revocation recorded for it, numbered one after the current one; for a hub CA
 * first makes or renews its OCSP responder. After writing, it counts the CA's revocations again: one recorded
 * meanwhile (whose request for a CRL may have been folded into this job) gets another round, so no revocation waits
 * for the next refresh. A CA that no longer exists (its hub deleted) has nothing to publish.
 */
export async function publishCrl(caId: string): Promise<{ crlNumber?: number; revoked?: number; responderIssued?: boolean }> {
  const ca = await CertificateAuthority.findByPk(caId);
  if (!ca) return {};
  const signer = ca.kind === 'ISSUING' ? (await hubCa(ca.hubId as string)).signer : await signerOf(ca);
  const responderIssued = ca.kind === 'ISSUING' ? await ensureResponder(ca, signer) : false;
  for (let round = 0; round < 20; round++) {
    const [current] = (await db().query('SELECT crl_number AS "crlNumber" FROM certificate_revocation_lists WHERE ca_id = :caId', {
      replacements: { caId },
      type: QueryTypes.SELECT,
    })) as { crlNumber: string }[];
    const previous = Number(current?.crlNumber ?? 0);
    const revoked = (await db().query(
      `SELECT serial_number AS "serialNumber", revoked_at AS "revokedAt", reason_code AS "reasonCode"
       FROM certificate_revocations WHERE ca_id = :caId ORDER BY revoked_at, serial_number`,
      { replacements: { caId }, type: QueryTypes.SELECT },
    )) as RevokedRow[];
    const window = updateWindow();
    const der = buildCrl({ issuer: signer, crlNumber: previous + 1, ...window, revoked });
    if (!(await writeCrl(caId, previous, der, window, revoked.length))) continue;
    if ((await countRevocations(caId)) === revoked.length) return { crlNumber: previous + 1, revoked: revoked.length, responderIssued };
  }
  throw new Error(`the CRL of CA ${caId} kept changing while it was signed; the job is retried`);
}

/**
 * The CAs whose CRL is due: none yet, or signed HUB_CRL_REFRESH ago (less the clock's minute); and hub CAs without
 * a responder or whose responder is due. At most `limit`, the most overdue first.
 */
export async function duePublications(limit = 500): Promise<{ caId: string; hubId: string | null }[]> {
  return (await db().query(
    `SELECT ca.id AS "caId", ca.hub_id AS "hubId"
     FROM certificate_authorities ca
     LEFT JOIN certificate_revocation_lists l ON l.ca_id = ca.id
     LEFT JOIN ocsp_responders o ON o.ca_id = ca.id
     WHERE l.ca_id IS NULL
        OR l.this_update <= now() - make_interval(secs => :refreshSeconds) + interval '1 minute'
        OR (ca.kind = 'ISSUING' AND (o.ca_id IS NULL OR o.not_after <= now() + make_interval(secs => :renewSeconds)))
     ORDER BY l.this_update NULLS FIRST
     LIMIT :limit`,
    { replacements: { refreshSeconds: config().crlRefreshMs / 1000, renewSeconds: responderRenewBeforeMs() / 1000, limit }, type: QueryTypes.SELECT },
  )) as { caId: string; hubId: string | null }[];
}
