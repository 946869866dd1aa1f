import { QueryTypes, UniqueConstraintError, type Transaction } from 'sequelize';
import { db, withTransaction } from '../../shared/db.js';
import { ApiError, conflict, forbidden, notFound } from '../../shared/errors.js';
import { ClientCertificate } from '../../shared/models/ClientCertificate.js';
import { BACKDATE_MS, ensureRootCa, hubCa } from '../../shared/pki/ca.js';
import { certificatePem, issueCertificate, type CertificateInfo } from '../../shared/pki/certificates.js';
import { csrParts } from '../../shared/pki/csr.js';
import { CERTIFICATE_COLUMNS } from '../../shared/commands/clientCertificates.js';
import { CREATE_HUB_CA_JOB, encodeRefusal, ISSUE_JOB, ROTATE_JOB, type IssuePayload } from '../../shared/pki/issuance.js';
import { preparedQuery } from '../../shared/db.js';
import { rotateSigningKey } from '../../shared/pki/signingKeys.js';
import { defineProcessor, permanentFailure, succeededSql, type JobContext } from '../runner.js';

const nameTaken = (name: string) => conflict(`name '${name}' is already used by a certificate request token or client certificate in this hub`);

function addYears(date: Date, years: number): Date {
  const d = new Date(date);
  d.setUTCFullYear(d.getUTCFullYear() + years);
  return d;
}

/**
 * Signs the CSR with the hub's issuing CA (only the worker holds CA keys). The web process verified the CSR before
 * enqueueing; here it is only taken apart.
 */
async function sign(hubId: string, p: IssuePayload): Promise<{ info: CertificateInfo; issuerId: string }> {
  const csr = csrParts(p.csr);
  const ca = await hubCa(hubId);
  const now = Date.now();
  const notBefore = new Date(Math.floor((now - BACKDATE_MS) / 1000) * 1000);
  const notAfter = addYears(new Date(Math.floor(now / 1000) * 1000), p.validYears);
  const issued = issueCertificate({
    subjectDer: csr.subjectDer,
    spkiDer: csr.spkiDer,
    issuer: ca.signer,
    notBefore,
    notAfter,
    profile: { kind: 'client' },
  });
  const info = { pem: certificatePem(issued.der), fingerprintSha256: issued.fingerprintSha256, subject: p.subject, serialNumber: issued.serialNumber, notBefore, notAfter };
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
 * Spends the token, stores its certificate and hands the token's name to it, as ONE statement (one transaction): the
 * conditional update lets exactly one of many concurrent redemptions through; the others find the token spent and
 * insert nothing. Foreign keys are checked at the end of the statement, when the certificate row exists.
 */
async function redeem(ctx: JobContext, hubId: string, p: Extract<IssuePayload, { mode: 'redeem' }>, id: string, signed: Awaited<ReturnType<typeof sign>>) {
  const { info, issuerId } = signed;
  const [row] = await preparedQuery<Record<string, unknown>>(
    'pki_redeem',
    `WITH spent AS (
       UPDATE certificate_request_tokens SET spent_at = now(), updated_at = now()
       WHERE id = $1 AND hub_id = $2 AND spent_at IS NULL AND expires_at > now()
       RETURNING id, name
     ), certificate AS (
       INSERT INTO client_certificates (id, hub_id, name, source, certificate_pem, issuer_id, fingerprint_sha256, subject,
         serial_number, not_before, not_after, certificate_request_token_id, created_by)
       SELECT $3, $2, spent.name, 'ENROLLMENT', $4, $5, $6, $7, $8, $9, $10, spent.id, $11
       FROM spent
       RETURNING *
     ), renamed AS (
       UPDATE pki_names SET token_id = NULL, certificate_id = (SELECT id FROM certificate)
       WHERE token_id = $1 AND hub_id = $2 AND EXISTS (SELECT 1 FROM certificate)
     ), finished AS (
       ${succeededSql('$12', '$13', 'EXISTS (SELECT 1 FROM certificate)')}
     )
     SELECT ${CERTIFICATE_COLUMNS} FROM certificate`,
    [p.tokenId, hubId, id, info.pem, issuerId, info.fingerprintSha256, info.subject, info.serialNumber, info.notBefore, info.notAfter, ctx.execution.createdBy, ctx.execution.id, JSON.stringify(issued(id))],
  );
  if (!row) throw forbidden('the certificate request token is spent, expired or deleted');
  ctx.succeeded = true;
  // the waiting web process answers with this row instead of reading it back
  ctx.reply = { certificate: row };
}

/** What an issuance job records on its execution. */
const issued = (certificateId: string) => ({ certificateId });

async function create(ctx: JobContext, hubId: string, p: Extract<IssuePayload, { mode: 'create' }>, id: string, signed: Awaited<ReturnType<typeof sign>>) {
  await withTransaction(async (transaction: Transaction) => {
    await ClientCertificate.create(
      { id, hubId, name: p.name, source: 'CSR', createdBy: ctx.execution.createdBy, ...certificateFields(signed.info, signed.issuerId) },
      { transaction },
    );
    await db().query(`INSERT INTO pki_names (hub_id, name, certificate_id) VALUES (:hubId, :name, :id)`, { replacements: { hubId, name: p.name, id }, transaction });
  });
}

async function replace(hubId: string, p: Extract<IssuePayload, { mode: 'replace' }>, signed: Awaited<ReturnType<typeof sign>>) {
  const [count] = await ClientCertificate.update(
    { name: p.name, source: 'CSR', ...certificateFields(signed.info, signed.issuerId) },
    { where: { id: p.certificateId, hubId } },
  );
  if (count === 0) throw notFound('client certificate', p.certificateId);
}

const issue = defineProcessor({
  type: ISSUE_JOB,
  // issuance is CPU-light (one ECDSA signature) and waits mostly on PostgreSQL: many at once keep both cores busy
  concurrency: 64,
  async handle(ctx) {
    const hubId = ctx.hubId as string;
    const p = ctx.payload as unknown as IssuePayload;
    // the certificate id is the execution id: a retry after a commit finds its own certificate instead of failing
    const id = p.mode === 'replace' ? p.certificateId : ctx.execution.id;
    if (p.mode !== 'replace' && ctx.attempt > 1 && (await ClientCertificate.findByPk(id, { attributes: ['id'] }))) return issued(id);
    try {
      const signed = await sign(hubId, p);
      if (p.mode === 'redeem') await redeem(ctx, hubId, p, id, signed);
      else if (p.mode === 'create') await create(ctx, hubId, p, id, signed);
      else await replace(hubId, p, signed);
    } catch (err) {
      if (err instanceof ApiError) throw permanentFailure(encodeRefusal(err));
      if (err instanceof UniqueConstraintError) throw permanentFailure(encodeRefusal(nameTaken((p as { name?: string }).name ?? '')));
      throw err;
    }
    return issued(id);
  },
});

const rotate = defineProcessor({
  type: ROTATE_JOB,
  async handle(ctx) {
    const { kid, rotated } = await rotateSigningKey(String(ctx.payload.supersedes));
    ctx.log.info({ kid, rotated }, rotated ? 'signing key rotated' : 'signing key already rotated');
    return { kid, rotated };
  },
});

/** A new hub's issuing CA, made ahead of its first certificate (issuance would otherwise make it on first use). */
const createHubCa = defineProcessor({
  type: CREATE_HUB_CA_JOB,
  async handle(ctx) {
    const ca = await hubCa(ctx.hubId!);
    return { certificateAuthorityId: ca.id };
  },
});

/** The root CA exists from the first start of a worker (race-safe when several start at once). */
export async function onWorkerStart(): Promise<void> {
  await ensureRootCa();
}

export default [issue, rotate, createHubCa];
