import type { EventEmitter } from 'node:events';
import { Job, QueueEvents } from 'bullmq';
import { config } from '../../shared/config.js';
import { DomainError, ERROR_CODES, unavailable, type ErrorCode, refusal } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { enqueueJob } from '../jobs/enqueue.js';
import { closeJobEnds, jobEndsChannel, waitForJobEnd, type JobEnd } from '../jobs/jobEnds.js';
import { closeWithConnection, queue } from '../jobs/queues.js';
import { createRedis } from '../../shared/redis.js';
import { settleWithin } from '../../shared/timeouts.js';
import type { ParsedCsr } from '../../shared/pki/csr.js';

/**
 * Certificate issuance runs in the worker (it holds the CA keys); the web process enqueues a job and waits for its
 * outcome: an issuance over this process's job-ends channel (jobs/jobEnds.ts), the other pki jobs (added by others,
 * so naming no channel) through QueueEvents. A refusal the worker decides (token spent meanwhile, name taken) travels
 * back as the job's failure message `<status> <code>: <message>` and becomes the same HTTP error here.
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
 * the whole wait, including the first connection of the process to Redis's event stream.
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

let events: Promise<QueueEvents> | undefined;
/** The reader behind `events`, also while it is not ready yet, so that closing never waits for Redis. */
let reader: QueueEvents | undefined;

function queueEvents(): Promise<QueueEvents> {
  events ??= (async () => {
    // Read from a little before now, not from '$': events written between creating this reader and its first
    // XREAD would otherwise be lost, and a wait registered in that gap (the first issuance of a process) would miss
    // its job's completion. Older events only reach listeners nobody registered.
    const e = new QueueEvents('pki', {
      connection: createRedis('worker'),
      prefix: config().queuePrefix,
      lastEventId: `${Date.now() - 5000}-0`,
    });
    reader = e;
    // every waiting request listens on both for its job
    e.setMaxListeners(0);
    queue('pki').setMaxListeners(0);
    e.on('error', () => {
      /* a lost connection surfaces as a wait that times out */
    });
    await e.waitUntilReady();
    return e;
  })().catch((err) => {
    events = undefined;
    const failed = reader;
    reader = undefined;
    if (failed) void closeWithConnection(failed);
    throw err;
  });
  return events;
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

/**
 * Waits for a pki job that may already exist (or have finished): registers for its end, then asks Redis for its state.
 * Not BullMQ's `waitUntilFinished`: it asks for the state inside an async Promise executor, so a Redis that fails the
 * question (away, its connection refusing at once) leaves an unhandled rejection, which ends the process.
 */
export async function waitForPkiJob<T>(jobId: string): Promise<T> {
  const deadline = Date.now() + waitMs();
  // the events connection retries for ever while Redis is away: the request must not wait with it
  const e = await before(queueEvents(), deadline, 'queue events not ready').catch(() => {
    throw queueUnavailable(jobId);
  });
  // listening before asking: an end between the two cannot be missed
  const end = listenForEnd(e, jobId, deadline);
  let state: { state: string; returnvalue?: unknown; failedReason?: string } | undefined;
  try {
    state = await before(finishedState(jobId), deadline, 'the job state was not read in time');
  } catch {
    end.stop();
    throw queueUnavailable(jobId);
  }
  if (state?.state === 'completed' || state?.state === 'failed') {
    end.stop();
    const ended = state.state === 'completed' ? Promise.resolve(state.returnvalue) : Promise.reject(new Error(state.failedReason || 'the job failed'));
    return outcome<T>(jobId, ended, deadline);
  }
  // waiting, active, delayed, or not added yet (the sweeper adds it once Redis takes it): its end is heard
  return outcome<T>(jobId, end.finished, deadline);
}

/**
 * The job's state with its outcome, or undefined when Redis has no such job. The state first, then the job: BullMQ
 * records a job's end and its outcome in one script, so a job read after its state said ended holds its outcome. Read
 * the other way round, a job ending between the two reads showed an ended state with its outcome still empty: a
 * refusal came back as "the job failed" (503), a result as null.
 */
async function finishedState(jobId: string): Promise<{ state: string; returnvalue?: unknown; failedReason?: string } | undefined> {
  const state = await queue('pki').getJobState(jobId);
  if (state === 'unknown') return undefined;
  if (state !== 'completed' && state !== 'failed') return { state };
  const job = await Job.fromId(queue('pki'), jobId);
  return job && { state, returnvalue: job.returnvalue, failedReason: job.failedReason };
}

/**
 * The end of a job that does not exist yet, heard on `e`: listening before the job is added, the wait cannot miss
 * its end, so it needs none of waitUntilFinished's look-up of the job's state (a Redis script per job).
 */
function listenForEnd(queueEvents: QueueEvents, jobId: string, deadline: number): { finished: Promise<unknown>; stop(): void } {
  // the per-job event names are not in QueueEvents's typed listener list
  const e = queueEvents as unknown as EventEmitter;
  const completed = `completed:${jobId}`;
  const failed = `failed:${jobId}`;
  let stop = () => {};
  const finished = new Promise((resolve, reject) => {
    const onCompleted = (args: { returnvalue: unknown }) => {
      stop();
      resolve(args.returnvalue);
    };
    const onFailed = (args: { failedReason: string }) => {
      stop();
      reject(new Error(args.failedReason));
    };
    const timer = setTimeout(() => onFailed({ failedReason: `job ${jobId} timed out before finishing` }), Math.max(1, deadline - Date.now()));
    stop = () => {
      clearTimeout(timer);
      e.off(completed, onCompleted);
      e.off(failed, onFailed);
    };
    e.on(completed, onCompleted);
    e.on(failed, onFailed);
  });
  // a caller that learnt the end another way (the job's state) or gave up does not await it: its failure is no crash
  finished.catch(() => undefined);
  return { finished, stop };
}

/** A pki job's end as a JobEnd, read from Redis (the state first, then the job): undefined while it has not ended. */
async function readEnd(jobId: string): Promise<JobEnd | undefined> {
  const state = await finishedState(jobId);
  if (state?.state === 'completed') return { id: jobId, ok: true, value: state.returnvalue };
  if (state?.state === 'failed') return { id: jobId, ok: false, reason: state.failedReason };
  return undefined;
}

/**
 * Enqueues an issuance job (one execution) and waits for the certificate id: the worker publishes the job's end on
 * this process's channel (jobs/jobEnds.ts), which the wait listens on before the job is added.
 */
export async function issueInWorker(spec: { hubId: string; payload: IssuePayload; createdBy: string; resourceId?: string }): Promise<IssueResult> {
  const id = newId();
  const deadline = Date.now() + waitMs();
  // the subscriber retries for ever while Redis is away: the request does not wait with it, but the execution is
  // still recorded (the sweeper adds its job once Redis is back)
  const replyTo = await before(jobEndsChannel(), deadline, 'job ends not subscribed').catch(() => undefined);
  const end = replyTo === undefined ? undefined : waitForJobEnd(id, deadline, () => readEnd(id));
  try {
    await enqueueJob({
      id,
      type: ISSUE_JOB,
      hubId: spec.hubId,
      resourceType: 'clientCertificate',
      resourceId: spec.resourceId,
      payload: spec.payload as unknown as Record<string, unknown>,
      createdBy: spec.createdBy,
      // a refusal is final; only infrastructure failures are worth a retry, and the caller is waiting
      jobOptions: { attempts: 3, backoff: { type: 'fixed', delay: 200 } },
      replyTo,
    });
  } catch (err) {
    end?.stop();
    throw err;
  }
  if (!end) throw queueUnavailable(id);
  return outcome<IssueResult>(id, end.finished, deadline);
}

/**
 * Closes the process's pki QueueEvents reader and its job-ends subscriber with their Redis connections (the web
 * process's stopServer does; a reader left open keeps the process alive with its blocking XREAD). The next wait
 * opens new ones.
 */
export async function closeIssuanceEvents(): Promise<void> {
  const e = reader;
  events = undefined;
  reader = undefined;
  await Promise.all([e && closeWithConnection(e), closeJobEnds()]);
}
