/**
 * Revocation as a record: a certificate the hub's CA issued that is deleted or re-issued over is written into
 * certificate_revocations (CA, serial, time, reason) in the same transaction as the change, and its CA's CRL is then
 * asked for (a pki job, domain/commands/crlPublication.ts). Uploaded certificates, which no CA of ours issued, are not recorded.
 */
import { QueryTypes, type Transaction } from 'sequelize';
import { config } from '../../shared/config.js';
import { db, preparedQuery } from '../../shared/db.js';
import { badRequest } from '../../shared/errors.js';
import { dispatch } from '../jobs/enqueue.js';
import { Execution } from '../models/Execution.js';
import { REVOCATION_REASONS, type RevocationReason } from '../../shared/pki/crl.js';
import type { RevocationUrls } from '../../shared/pki/certificates.js';
import { PUBLISH_CRL_JOB } from './pkiJobs.js';

/** nextUpdate is this much after the time a CRL (or an OCSP answer) is due to be signed anew (HUB_CRL_REFRESH). */
const CRL_MARGIN_MS = 60 * 60 * 1000;

/** thisUpdate and nextUpdate of a CRL or OCSP answer signed at `now` (whole seconds). */
export function updateWindow(now = Date.now()): { thisUpdate: Date; nextUpdate: Date } {
  const thisUpdate = new Date(Math.floor(now / 1000) * 1000);
  return { thisUpdate, nextUpdate: new Date(thisUpdate.getTime() + config().crlRefreshMs + CRL_MARGIN_MS) };
}

/** The reason code of a `reason` query value (RFC 5280 names); absent is `unspecified`; anything else is a 400. */
export function reasonCode(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value === 'string' && Object.hasOwn(REVOCATION_REASONS, value)) return REVOCATION_REASONS[value as RevocationReason];
  throw badRequest(`value for query parameter 'reason' must be one of ${Object.keys(REVOCATION_REASONS).join(', ')}`);
}

interface Revocation {
  caId: string;
  hubId: string | null;
  serialNumber: string;
  certificateId?: string;
  reasonCode: number;
  revokedBy: string;
}

/** Records a revocation inside `transaction` (a serial already revoked keeps its first record). */
export async function recordRevocation(r: Revocation, transaction: Transaction): Promise<void> {
  await db().query(
    `INSERT INTO certificate_revocations (ca_id, serial_number, hub_id, certificate_id, reason_code, revoked_by)
     VALUES (:caId, :serialNumber, :hubId, :certificateId, :reasonCode, :revokedBy) ON CONFLICT DO NOTHING`,
    { replacements: { ...r, serialNumber: r.serialNumber.toLowerCase(), certificateId: r.certificateId ?? null }, type: QueryTypes.INSERT, transaction },
  );
}

/**
 * Records the revocation of agents' certificates (`id`, `serialNumber` each) inside `transaction`: an agent's
 * certificate is issued by its hub's issuing CA. Returns that CA's id, whose CRL is to be asked for once committed.
 */
export async function recordAgentRevocations(
  hubId: string,
  agents: { id: string; serialNumber: string }[],
  reasonCode: number,
  revokedBy: string,
  transaction: Transaction,
): Promise<string | undefined> {
  if (!agents.length) return undefined;
  const [ca] = await db().query<{ id: string }>(`SELECT id FROM certificate_authorities WHERE hub_id = :hubId AND kind = 'ISSUING'`, {
    replacements: { hubId },
    type: QueryTypes.SELECT,
    transaction,
  });
  // no issuing CA: no agent certificate of this hub was ever issued
  if (!ca) return undefined;
  for (const agent of agents)
    await recordRevocation({ caId: ca.id, hubId, serialNumber: agent.serialNumber, certificateId: agent.id, reasonCode, revokedBy }, transaction);
  return ca.id;
}

/**
 * Asks for a CA's CRL to be signed anew (and its OCSP responder made or renewed). The job's id names the CA and the
 * number of the CRL it follows (`crl-<ca>-<number>`), read after the caller's change committed: requests made before
 * that CRL is replaced are one job. A job that started before the change cannot miss it: after writing its CRL it
 * counts the CA's revocations again and signs once more when there are more than it included (crlPublication.ts),
 * and once it wrote its CRL a later request reads the new number, a new job.
 */
export async function requestCrl(caId: string, hubId: string | null, createdBy: string): Promise<Execution> {
  const [current] = await preparedQuery<{ crl_number: string }>('pki_crl_number', 'SELECT crl_number FROM certificate_revocation_lists WHERE ca_id = $1', [
    caId,
  ]);
  const base = `crl-${caId}-${current?.crl_number ?? 0}`;
  const earlier = await Execution.findByPk(base, { attributes: ['status'] });
  // a job of that id that failed for good does not hold back the next request
  const id = earlier?.status === 'FAILED' ? `${base}-${Date.now()}` : base;
  await Execution.bulkCreate(
    [
      {
        id,
        processId: id,
        hubId,
        type: PUBLISH_CRL_JOB,
        resourceType: 'certificateAuthority',
        resourceId: caId,
        status: 'QUEUED',
        payload: { caId },
        createdBy,
        jobOptions: { attempts: 5, backoff: { type: 'exponential', delay: 500 } },
      },
    ],
    { ignoreDuplicates: true },
  );
  const execution = (await Execution.findByPk(id)) as Execution;
  if (execution.status === 'QUEUED' || execution.status === 'RUNNING') await dispatch(execution);
  return execution;
}

/** Requests the CRL of each CA, never failing the caller's request (the clock's refresh catches up). */
export async function requestCrlsQuietly(cas: { caId: string; hubId: string | null }[], createdBy: string): Promise<void> {
  const seen = new Set<string>();
  for (const { caId, hubId } of cas) {
    if (seen.has(caId)) continue;
    seen.add(caId);
    await requestCrl(caId, hubId, createdBy).catch(() => undefined);
  }
}

/** The public URLs of a hub's CA (or the root's): its CRL, its OCSP responder and its certificate. */
export function pkiUrls(hubId: string | 'root'): Required<RevocationUrls> {
  const base = `${config().publicBaseUrl}/pki/${hubId}`;
  return { crl: `${base}/crl`, ocsp: `${base}/ocsp`, caIssuers: `${base}/ca` };
}
