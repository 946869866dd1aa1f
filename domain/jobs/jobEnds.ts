import { preparedQuery } from '../../shared/db.js';
import { listen, type Listener } from '../../shared/pgListen.js';
import { settleWithin } from '../../shared/timeouts.js';
import type { QueueName } from './queues.js';

/**
 * The end of a job that a request waits for, told over PostgreSQL LISTEN/NOTIFY: the worker that finished it NOTIFYs
 * its id and its outcome (the job's return value, or its failure message) on one channel, and each web process hears
 * it on the LISTEN connection it already holds (shared/pgListen.ts). Not BullMQ's QueueEvents: every reader of a
 * queue's event stream reads (and parses) every event of every job, five or so per job, where a waiter needs one.
 *
 * A notification is not guaranteed: the worker can die between finishing the job and telling it, PostgreSQL can be
 * away at that instant, the LISTEN connection can be down or silent. So a waiter also reads the job's state itself
 * (from Redis, which holds the outcome as before): FIRST_CHECK_MS after it starts waiting, then at growing intervals
 * until its deadline, and at once when the LISTEN connection listens anew (what came while it was down is lost).
 */

/** The channel every job end of the queues in AWAITED_QUEUES is told on: `<job id>` or `<job id> <JSON of JobEnd>`. */
export const JOB_END_CHANNEL = 'edgehub_job_end';

/** The queues whose jobs web requests wait for (domain/commands/pkiJobs.ts): only theirs are told. */
export const AWAITED_QUEUES: readonly QueueName[] = ['pki'];

/** A job's outcome as its waiter receives it: the return value, or the failed job's message. */
export type JobEnd = { ok: true; value: unknown } | { ok: false; reason: string };

/** A NOTIFY payload holds at most 8000 bytes: a larger outcome is told as the job id alone (its waiter reads it). */
const MAX_PAYLOAD_BYTES = 7900;

/**
 * When a waiter that heard nothing reads the job's state first, then at twice the interval, up to MAX_CHECK_MS: late
 * enough that a loaded machine's slow answers are not read twice (each read is a Redis round trip and a script).
 */
const FIRST_CHECK_MS = 2000;
const MAX_CHECK_MS = 8000;
/** One read of the job's state, at most (Redis away: the next one tries again). */
const CHECK_TIMEOUT_MS = 3000;

/** The worker's side: tells the waiters (if any) that `jobId` ended. Rejects when PostgreSQL did not take it. */
export async function notifyJobEnd(jobId: string, end: JobEnd): Promise<void> {
  let payload = `${jobId} ${JSON.stringify(end)}`;
  // a UTF-16 unit is at most 3 bytes of UTF-8: most payloads need no count
  if (payload.length * 3 > MAX_PAYLOAD_BYTES && Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) payload = jobId;
  // A NOTIFY gives its transaction an id, so its commit is written to the WAL and, by default, flushed (an fsync)
  // before it returns: for a message that a crash may lose anyway (its waiter then reads the job), the flush is
  // waste. set_config(..., true) turns synchronous_commit off for this statement's transaction alone.
  await preparedQuery('job_end_notify', "SELECT pg_notify($1, $2), set_config('synchronous_commit', 'off', true)", [JOB_END_CHANNEL, payload]);
}

type Hear = (end: JobEnd | undefined) => void;
/** The waiters by job id; `undefined` tells one to read its job's state. */
const waiters = new Map<string, Set<Hear>>();
let listener: Listener | undefined;

function heard(payload: string): void {
  const space = payload.indexOf(' ');
  const hears = waiters.get(space < 0 ? payload : payload.slice(0, space));
  if (!hears) return;
  let end: JobEnd | undefined;
  if (space >= 0) {
    try {
      end = JSON.parse(payload.slice(space + 1)) as JobEnd;
    } catch {
      end = undefined;
    }
  }
  for (const hear of [...hears]) hear(end);
}

function reset(why: 'lost' | 'listening'): void {
  // listening anew: an end told while the connection was down was lost; while it is down, the waiters' checks run
  if (why === 'listening') for (const hears of [...waiters.values()]) for (const hear of [...hears]) hear(undefined);
}

/**
 * Starts this process's listening for job ends (once) and waits, until `deadline` (epoch ms) at most, for it to be
 * live. Never rejects: a waiter whose end could not be heard reads its job's state.
 */
export async function listenForJobEnds(deadline: number): Promise<void> {
  listener ??= listen(JOB_END_CHANNEL, heard, reset);
  if (listener.live) return;
  await listener.ready(Math.max(1, deadline - Date.now())).catch(() => undefined);
}

/** Stops this process's listening (the web process's stop); the next wait starts it again. */
export async function stopListeningForJobEnds(): Promise<void> {
  const l = listener;
  listener = undefined;
  await l?.close();
}

/**
 * The end of job `jobId`: heard when its worker tells it, or read by `check` (undefined while the job has not ended)
 * when nothing was heard. Rejects with `job <id> timed out before finishing` at `deadline`. Register before the job can
 * end (before adding it, or before reading its state), so that no end comes unheard between the two.
 */
export function waitForJobEnd(jobId: string, deadline: number, check: () => Promise<JobEnd | undefined>): { ended: Promise<JobEnd>; stop(): void } {
  let stop = () => {};
  const ended = new Promise<JobEnd>((resolve, reject) => {
    let done = false;
    let checking = false;
    let interval = FIRST_CHECK_MS;
    let checkTimer: NodeJS.Timeout | undefined;
    const finish = (end: JobEnd) => {
      if (done) return;
      stop();
      resolve(end);
    };
    const lookUp = () => {
      if (done || checking) return;
      checking = true;
      settleWithin(check(), CHECK_TIMEOUT_MS, () => new Error('the job state was not read in time')).then(
        (end) => {
          checking = false;
          if (end) finish(end);
        },
        () => {
          checking = false;
        },
      );
    };
    const scheduleCheck = () => {
      checkTimer = setTimeout(() => {
        lookUp();
        interval = Math.min(interval * 2, MAX_CHECK_MS);
        scheduleCheck();
      }, interval);
    };
    const hear: Hear = (end) => (end ? finish(end) : lookUp());
    const deadlineTimer = setTimeout(
      () => {
        if (done) return;
        stop();
        reject(new Error(`job ${jobId} timed out before finishing`));
      },
      Math.max(1, deadline - Date.now()),
    );
    stop = () => {
      done = true;
      clearTimeout(checkTimer);
      clearTimeout(deadlineTimer);
      const hears = waiters.get(jobId);
      hears?.delete(hear);
      if (hears?.size === 0) waiters.delete(jobId);
    };
    const hears = waiters.get(jobId) ?? new Set<Hear>();
    hears.add(hear);
    waiters.set(jobId, hears);
    scheduleCheck();
  });
  // a caller that learnt the end another way or gave up does not await it: its failure is no crash
  ended.catch(() => undefined);
  return { ended, stop };
}
