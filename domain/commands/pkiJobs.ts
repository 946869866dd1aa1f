import { Job } from 'bullmq';
import { config } from '../../shared/config.js';
import { DomainError, ERROR_CODES, unavailable, type ErrorCode, refusal } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { enqueueJob } from '../jobs/enqueue.js';
import { type JobEnd, listenForJobEnds, stopListeningForJobEnds, waitForJobEnd } from '../jobs/jobEnds.js';
import { connectedQueue } from '../jobs/queues.js';
import { settleWithin } from '../../shared/timeouts.js';
import type { ParsedCsr } from '../../shared/pki/csr.js';

/**
 * Certificate issuance runs in the worker (it holds the CA keys); the web process enqueues a job and waits for its
 * outcome, which the worker tells over PostgreSQL NOTIFY (domain/jobs/jobEnds.ts; the job's state in Redis read
 * when nothing is heard). A refusal the worker decides (token spent meanwhile, name taken) travels back as the
 * job's failure message `<status> <code>: <message>` and becomes the same HTTP error here.
 */

export const ISSUE_JOB = 'pki.issueCertificate';
export const ROTATE_JOB = 'pki.rotateSigningKey';
export const CREATE_HUB_CA_JOB = 'pki.createHubCa';
/** Signs a CA's CRL anew (and makes or renews a hub CA's OCSP responder): domain/commands/crlPublication.ts. */
export const PUBLISH_CRL_JOB = 'pki.publishCrl';

/**
 * What the worker signs: the subject Name and the SubjectPublicKeyInfo of a CSR the web process verified (proof of
 * possession, key policy, subject constraints), as the requester encoded them (base64 DER), and the subject as text.
 * The worker never parses the CSR again.
 */
export type IssuePayload = { subject: string; subjectDer: string; spki: string; validYears: number } & (
  | { mode: 'create'; name: string }
  | { mode: 'redeem'; tokenId: string }
  | { mode: 'replace'; certificateId: string; name: string }
);

/** The part of an IssuePayload that comes from the verified CSR. */
export const issueRequestOf = (csr: ParsedCsr) => ({
  subject: csr.subjectText,
  subjectDer: csr.subjectDer.toString('base64'),
  spki: csr.spkiDer.toString('base64'),
});

export interface IssueResult {
  certificateId: string;
  /** The certificate row as the worker wrote it (a redemption's job returns it; JSON, dates as strings). */
  certificate?: Record<string, unknown>;
}

/**
 * How long a request waits for its job (certificate, key rotation) before answering 503 (the job still completes):
 * the whole wait, including the first LISTEN of the process for job ends.
 */
const waitMs = () => config().issuanceWaitMs;

/** `promise`, or a rejection with `message` once `deadline` (epoch ms) has passed. */
const before = <T>(promise: Promise<T>, deadline: number, message: string): Promise<T> =>
  settleWithin(promise, deadline - Date.now(), () => new Error(message));

/** A refusal as the failed job's message (`<code>: <message>`), which the waiting web process turns back into it. */
export function encodeRefusal(err: DomainError): string {
  return `${err.code}: ${err.message}`;
}

export function decodeRefusal(message: string): DomainError | undefined {
  const match = /^(EH_[A-Z0-9_]+): ([\s\S]*)$/.exec(message);
  return match && match[1] in ERROR_CODES ? new DomainError(match[1] as ErrorCode, match[2]) : undefined;
}

const queueUnavailable = (jobId: string) =>
  refusal('EH_QUEUE_UNAVAILABLE', `the job queue (Redis) cannot be reached; the request is kept as execution ${jobId} and runs once it is back`);

/** The end of a wait for a pki job: its result, or its refusal as the DomainError again, anything else EH_UNAVAILABLE. */
async function outcome<T>(jobId: string, finished: Promise<unknown>, deadline: number): Promise<T> {
  try {
    return (await before(finished, deadline + 1000, 'timed out waiting for the job')) as T;
  } catch (err) {
    const message = (err as Error).message ?? '';
    const refused = decodeRefusal(message);
    if (refused) throw refused;
    if (/timed out/i.test(message))
      throw refusal('EH_ISSUANCE_PENDING', `certificate issuance is taking longer than expected; it continues as execution ${jobId}`);
    throw unavailable(`certificate issuance failed (execution ${jobId}); retry later`);
  }
}

/** A job's end as the waiter takes it: its result, or a rejection with its failure message. */
const settled = (end: JobEnd): Promise<unknown> => (end.ok ? Promise.resolve(end.value) : Promise.reject(new Error(end.reason)));

/**
 * The end of pki job `jobId` as Redis holds it, or undefined while it has not ended (or Redis has no such job). The
 * state first, then the job: BullMQ records a job's end and its outcome in one script, so a job read after its state
 * said ended holds its outcome; read the other way round, a job that ends between the two reads would show an ended
 * state with the outcome still empty (a refusal read as "the job failed", a certificate as nothing).
 */
async function endOf(jobId: string): Promise<JobEnd | undefined> {
  const q = await connectedQueue('pki');
  const state = await q.getJobState(jobId);
  if (state !== 'completed' && state !== 'failed') return undefined;
  const job = await Job.fromId(q, jobId);
  if (!job) return undefined;
  if (state === 'completed') return { ok: true, value: job.returnvalue };
  return { ok: false, reason: job.failedReason || 'the job failed' };
}

/**
 * Waits for a pki job that may already exist (or have finished): registers for its end, then asks Redis for its state.
 * Not BullMQ's `waitUntilFinished`: it asks for the state inside an async Promise executor, so a Redis that fails the
 * question (away, its connection refusing at once) leaves an unhandled rejection, which ends the process.
 */
export async function waitForPkiJob<T>(jobId: string): Promise<T> {
  const deadline = Date.now() + waitMs();
  await listenForJobEnds(deadline);
  // listening before asking: an end between the two cannot be missed
  const wait = waitForJobEnd(jobId, deadline, () => endOf(jobId));
  let end: JobEnd | undefined;
  try {
    end = await before(endOf(jobId), deadline, 'the job state was not read in time');
  } catch {
    wait.stop();
    throw queueUnavailable(jobId);
  }
  if (end) {
    wait.stop();
    return outcome<T>(jobId, settled(end), deadline);
  }
  // waiting, active, delayed, or not added yet (the sweeper adds it once Redis takes it): its end is heard
  return outcome<T>(jobId, wait.ended.then(settled), deadline);
}

/** Enqueues an issuance job (one execution) and waits for the certificate id. */
export async function issueInWorker(spec: { hubId: string; payload: IssuePayload; createdBy: string; resourceId?: string }): Promise<IssueResult> {
  const id = newId();
  const deadline = Date.now() + waitMs();
  await listenForJobEnds(deadline);
  // registered before the job is added: its end cannot come unheard
  const wait = waitForJobEnd(id, deadline, () => endOf(id));
  let dispatched: boolean;
  try {
    dispatched = await enqueueJob({
      id,
      type: ISSUE_JOB,
      hubId: spec.hubId,
      resourceType: 'clientCertificate',
      resourceId: spec.resourceId,
      payload: spec.payload as unknown as Record<string, unknown>,
      createdBy: spec.createdBy,
      // a refusal is final; only infrastructure failures are worth a retry, and the caller is waiting
      jobOptions: { attempts: 3, backoff: { type: 'fixed', delay: 200 } },
    });
  } catch (err) {
    wait.stop();
    throw err;
  }
  // Redis did not take the job: the execution is recorded, and the sweeper adds its job once Redis is back
  if (!dispatched) {
    wait.stop();
    throw queueUnavailable(id);
  }
  return outcome<IssueResult>(id, wait.ended.then(settled), deadline);
}

/** Stops this process's listening for job ends (the web process's stopServer does); the next wait starts it again. */
export async function closeIssuanceEvents(): Promise<void> {
  await stopListeningForJobEnds();
}
