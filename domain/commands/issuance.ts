/**
 * Issuing a client certificate (the worker's part of enrollment, CSR signing and replacement; only the worker holds CA
 * keys): the CSR signed with the hub's issuing CA, then stored. A redemption claims the job's execution, spends its
 * token, stores the certificate, hands the token's name to it and marks the execution SUCCEEDED in ONE statement, so
 * of many concurrent redemptions exactly one gets a certificate.
 */
import { QueryTypes, Transaction, UniqueConstraintError } from 'sequelize';
import { db, HUB_MATCHES, preparedQuery, withTransaction } from '../../shared/db.js';
import { notFound, NotClaimed, refusal } from '../../shared/errors.js';
import { ClientCertificate } from '../models/ClientCertificate.js';
import { hubCa, leafValidity } from './certificateAuthorities.js';
import { certificatePem, issueCertificate, partsToCertify, type CertificateInfo } from '../../shared/pki/certificates.js';
import { ISSUE_JOB, type IssuePayload } from './pkiJobs.js';
import { CERTIFICATE_COLUMNS } from './clientCertificates.js';
import { recordRevocation, requestCrlsQuietly } from './revocations.js';
import { REVOCATION_REASONS } from '../../shared/pki/crl.js';

/** The job an issuance runs in: its execution (the certificate's id for new ones), who asked, which attempt. */
interface IssuingJob {
  executionId: string;
  createdBy: string;
  attempt: number;
}

interface Issued {
  certificateId: string;
  /** For a redemption: the stored row (the waiting web process answers with it) and the execution already SUCCEEDED. */
  certificate?: Record<string, unknown>;
}

const nameTaken = (name: string) => refusal('EH_NAME_TAKEN', `name '${name}' is already used by a certificate request token or client certificate in this hub`);

/**
 * The subject and key to certify, from the job: the parts of a CSR the web process verified, as they were encoded.
 * The subject text stored beside the certificate is the web process's reading of those same bytes. Parts that are not
 * a Name and a key in strict DER are refused for good (retrying cannot mend them).
 */
function requested(p: IssuePayload): ReturnType<typeof partsToCertify> {
  try {
    return partsToCertify(Buffer.from(p.subjectDer, 'base64'), Buffer.from(p.spki, 'base64'));
  } catch (err) {
    throw refusal('EH_CSR_INVALID', `the subject or key to certify could not be read (${(err as Error).message})`);
  }
}

/** Signs the CSR's subject and key with the hub's issuing CA (only the worker holds CA keys). */
async function sign(hubId: string, p: IssuePayload): Promise<{ info: CertificateInfo; issuerId: string }> {
  const { subject, publicKey } = requested(p);
  const ca = await hubCa(hubId);
  const { notBefore, notAfter } = leafValidity(p.validYears);
  const issued = await issueCertificate({
    subject,
    publicKey,
    issuer: ca.signer,
    notBefore,
    notAfter,
    profile: { kind: 'client' },
    // CRL Distribution Points and Authority Information Access: where others check its revocation
    revocation: ca.urls,
  });
  const info = {
    pem: certificatePem(issued.der),
    fingerprintSha256: issued.fingerprintSha256,
    subject: p.subject,
    serialNumber: issued.serialNumber,
    notBefore,
    notAfter,
  };
  return { info, issuerId: ca.id };
}

function certificateFields(info: CertificateInfo, issuerId: string) {
  return {
    certificatePem: info.pem,
    issuerId,
    fingerprintSha256: info.fingerprintSha256,
    subject: info.subject,
    serialNumber: info.serialNumber,
    notBefore: info.notBefore,
    notAfter: info.notAfter,
  };
}

/**
 * Claims the execution, spends the token, stores its certificate and hands the token's name to it, as ONE statement
 * (one transaction): the conditional update lets exactly one of many concurrent redemptions through; the others find
 * the token spent and insert nothing. The claim holds the execution while it is still to run and is this job's (its
 * type, its payload and who asked, as the job carries them; for a run the runner started they are the row's own), and
 * marks it SUCCEEDED with this attempt: so the runner need not mark it RUNNING first. Foreign keys are checked at the
 * end of the statement, when the certificate row exists.
 */
async function redeem(
  job: IssuingJob,
  hubId: string,
  p: Extract<IssuePayload, { mode: 'redeem' }>,
  id: string,
  signed: Awaited<ReturnType<typeof sign>>,
): Promise<Record<string, unknown>> {
  const { info, issuerId } = signed;
  const [row] = await preparedQuery<Record<string, unknown> & { claimed: boolean }>('pki_redeem', REDEEM_SQL, [
    p.tokenId,
    hubId,
    id,
    info.pem,
    issuerId,
    info.fingerprintSha256,
    info.subject,
    info.serialNumber,
    info.notBefore,
    info.notAfter,
    job.createdBy,
    job.executionId,
    JSON.stringify(issued(id)),
    job.attempt,
    JSON.stringify(p),
  ]);
  if (!row.claimed) throw new NotClaimed(`execution ${job.executionId} is not this job's to claim`);
  if (row.id === null) throw refusal('EH_TOKEN_SPENT', 'the certificate request token is spent, expired or deleted');
  const { claimed: _claimed, ...certificate } = row;
  return certificate;
}

/** The redemption's one statement (rows found by their keys alone: see HUB_MATCHES in shared/db.ts). */
export const REDEEM_SQL = `WITH claimed AS (
       SELECT id FROM executions
       WHERE id = $12 AND type = '${ISSUE_JOB}' AND status IN ('QUEUED', 'RUNNING') AND created_by = $11 AND payload = $15::jsonb
       FOR UPDATE
     ), spent AS (
       UPDATE certificate_request_tokens SET spent_at = now(), updated_at = now()
       WHERE id = $1 AND ${HUB_MATCHES('$2')} AND spent_at IS NULL AND expires_at > now() AND EXISTS (SELECT 1 FROM claimed)
       RETURNING id, name
     ), certificate AS (
       INSERT INTO client_certificates (id, hub_id, name, source, certificate_pem, issuer_id, fingerprint_sha256, subject,
         serial_number, not_before, not_after, certificate_request_token_id, created_by)
       SELECT $3, $2, spent.name, 'ENROLLMENT', $4, $5, $6, $7, $8, $9, $10, spent.id, $11
       FROM spent
       RETURNING *
     ), renamed AS (
       UPDATE pki_names SET token_id = NULL, certificate_id = (SELECT id FROM certificate)
       WHERE token_id = $1 AND ${HUB_MATCHES('$2')} AND EXISTS (SELECT 1 FROM certificate)
     ), finished AS (
       UPDATE executions SET status = 'SUCCEEDED', result = $13::jsonb, error = NULL, finished_at = now(), attempts = $14,
         started_at = COALESCE(started_at, now())
       WHERE id = $12 AND status IN ('QUEUED', 'RUNNING') AND EXISTS (SELECT 1 FROM certificate)
     )
     SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, c.*
     FROM (SELECT 1) AS one LEFT JOIN (SELECT ${CERTIFICATE_COLUMNS} FROM certificate) AS c ON true`;

/** What an issuance job records on its execution. */
const issued = (certificateId: string) => ({ certificateId });

async function create(job: IssuingJob, hubId: string, p: Extract<IssuePayload, { mode: 'create' }>, id: string, signed: Awaited<ReturnType<typeof sign>>) {
  await withTransaction(async (transaction: Transaction) => {
    await ClientCertificate.create(
      { id, hubId, name: p.name, source: 'CSR', createdBy: job.createdBy, ...certificateFields(signed.info, signed.issuerId) },
      { transaction },
    );
    await db().query(`INSERT INTO pki_names (hub_id, name, certificate_id) VALUES (:hubId, :name, :id)`, {
      replacements: { hubId, name: p.name, id },
      transaction,
    });
  });
}

/**
 * Re-issues over a certificate: the row takes the new certificate, and the one it replaces, when our CA issued it, is
 * revoked (superseded) in the same transaction. Returns the CA whose CRL changed, if any.
 */
async function replace(hubId: string, p: Extract<IssuePayload, { mode: 'replace' }>, signed: Awaited<ReturnType<typeof sign>>, revokedBy: string) {
  return withTransaction(async (transaction: Transaction) => {
    const [old] = (await db().query(
      `SELECT issuer_id AS "issuerId", serial_number AS "serialNumber" FROM client_certificates WHERE id = :id AND hub_id = :hubId FOR UPDATE`,
      {
        replacements: { id: p.certificateId, hubId },
        type: QueryTypes.SELECT,
        transaction,
      },
    )) as { issuerId: string | null; serialNumber: string }[];
    if (!old) throw notFound('client certificate', p.certificateId);
    await ClientCertificate.update(
      { name: p.name, source: 'CSR', ...certificateFields(signed.info, signed.issuerId) },
      { where: { id: p.certificateId, hubId }, transaction },
    );
    if (!old.issuerId || old.serialNumber === signed.info.serialNumber) return undefined;
    await recordRevocation(
      { caId: old.issuerId, hubId, serialNumber: old.serialNumber, certificateId: p.certificateId, reasonCode: REVOCATION_REASONS.superseded, revokedBy },
      transaction,
    );
    return old.issuerId;
  });
}

/**
 * Issues the certificate a job asks for. Refusals are DomainErrors (a name taken is EH_CONFLICT); anything else is retried by
 * the job. A retry after a commit finds its own certificate (the id is the execution id) instead of failing.
 */
export async function issueClientCertificate(hubId: string, p: IssuePayload, job: IssuingJob): Promise<Issued> {
  const id = p.mode === 'replace' ? p.certificateId : job.executionId;
  if (p.mode !== 'replace' && job.attempt > 1 && (await ClientCertificate.findByPk(id, { attributes: ['id'] }))) return { certificateId: id };
  try {
    const signed = await sign(hubId, p);
    if (p.mode === 'redeem') return { certificateId: id, certificate: await redeem(job, hubId, p, id, signed) };
    if (p.mode === 'create') await create(job, hubId, p, id, signed);
    else {
      const revokedCa = await replace(hubId, p, signed, job.createdBy);
      if (revokedCa) await requestCrlsQuietly([{ caId: revokedCa, hubId }], 'scheduler');
    }
  } catch (err) {
    if (err instanceof UniqueConstraintError) throw nameTaken((p as { name?: string }).name ?? '');
    throw err;
  }
  return { certificateId: id };
}
