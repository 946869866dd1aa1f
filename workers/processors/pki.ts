import { z } from 'zod';
import { issueClientCertificate } from '../../domain/commands/issuance.js';
import { DomainError } from '../../shared/errors.js';
import { ensureRootCa, hubCa } from '../../domain/commands/certificateAuthorities.js';
import { CREATE_HUB_CA_JOB, encodeRefusal, ISSUE_JOB, PUBLISH_CRL_JOB, ROTATE_JOB, type IssuePayload } from '../../domain/commands/pkiJobs.js';
import { publishCrl } from '../../domain/commands/crlPublication.js';
import { rotateSigningKey } from '../../domain/commands/signingKeys.js';
import { defineProcessor, NO_PAYLOAD, permanentFailure } from '../processor.js';

/** What issueInWorker enqueues (IssuePayload): the CSR's subject and key (base64 DER), the validity, and what the issuance is for. */
const base64 = z
  .string()
  .min(1)
  .max(8192)
  .regex(/^[A-Za-z0-9+/]+={0,2}$/);
const issueBase = { subject: z.string().max(4096), subjectDer: base64, spki: base64, validYears: z.number().int().positive() };
const name = z.string().min(1).max(200);
const issuePayload = z.discriminatedUnion('mode', [
  z.object({ ...issueBase, mode: z.literal('create'), name }).strict(),
  z.object({ ...issueBase, mode: z.literal('redeem'), tokenId: name }).strict(),
  z.object({ ...issueBase, mode: z.literal('replace'), certificateId: name, name }).strict(),
]);

const issue = defineProcessor({
  type: ISSUE_JOB,
  payload: issuePayload,
  // issuance is CPU-light (one ECDSA signature) and waits mostly on PostgreSQL: many at once keep both cores busy
  concurrency: 64,
  // a redemption's one statement claims its execution (issuance.ts): no RUNNING mark before it
  claimsExecution: (payload) => payload.mode === 'redeem',
  async handle(ctx) {
    const p = ctx.payload as unknown as IssuePayload;
    let done;
    try {
      done = await issueClientCertificate(ctx.hubId as string, p, { executionId: ctx.execution.id, createdBy: ctx.execution.createdBy, attempt: ctx.attempt });
    } catch (err) {
      // a refusal is final; the waiting request answers it
      if (err instanceof DomainError) throw permanentFailure(encodeRefusal(err));
      throw err;
    }
    if (done.certificate) {
      // the redemption's statement already marked the execution SUCCEEDED; the waiting web process answers with the row
      ctx.succeeded = true;
      ctx.reply = { certificate: done.certificate };
    }
    return { certificateId: done.certificateId };
  },
});

const rotate = defineProcessor({
  type: ROTATE_JOB,
  payload: z.object({ supersedes: z.string().min(1).max(200) }).strict(),
  async handle(ctx) {
    const { kid, rotated } = await rotateSigningKey(String(ctx.payload.supersedes));
    ctx.log.info({ kid, rotated }, rotated ? 'signing key rotated' : 'signing key already rotated');
    return { kid, rotated };
  },
});

/** A new hub's issuing CA, made ahead of its first certificate (issuance would otherwise make it on first use). */
const createHubCa = defineProcessor({
  type: CREATE_HUB_CA_JOB,
  payload: NO_PAYLOAD,
  async handle(ctx) {
    const ca = await hubCa(ctx.hubId!);
    return { certificateAuthorityId: ca.id };
  },
});

/**
 * A CA's CRL signed anew (and a hub CA's OCSP responder made or renewed): asked for by each revocation and by the
 * clock's refresh; requests made before the CA's current CRL is replaced share one job (domain/commands/revocations.ts).
 */
const publish = defineProcessor({
  type: PUBLISH_CRL_JOB,
  payload: z.object({ caId: name }).strict(),
  concurrency: 8,
  async handle(ctx) {
    return publishCrl(String(ctx.payload.caId));
  },
});

/** The root CA exists from the first start of a worker (race-safe when several start at once). */
export async function onWorkerStart(): Promise<void> {
  await ensureRootCa();
}

export default [issue, rotate, createHubCa, publish];
