import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { config } from '../../shared/config.js';
import { closeConnection, createRedis } from '../../shared/redis.js';

/**
 * The end of a job heard over Redis pub/sub, for a web process that waits for the jobs it adds (certificate
 * issuance): the process subscribes one channel of its own on one connection and names it in each such job's data
 * (`replyTo`); the worker publishes the job's outcome there once BullMQ has recorded it (workers/runner.ts). One
 * message per job, where BullMQ's QueueEvents reads every event of every job of the queue.
 *
 * Pub/sub keeps nothing: a message published while the subscriber's connection was down is lost, and a job re-added
 * by the sweeper names no channel. So a waiter also reads its job's state (the caller's `readEnd`) whenever the
 * subscriber's connection comes back and after 2, 4 and 8 s, then every 8 s, until its deadline.
 */

/** What a worker publishes on a job's `replyTo` channel (JSON). */
export interface JobEnd {
  id: string;
  /** true: completed, with `value` its return value; false: failed for good, with `reason` its failure message. */
  ok: boolean;
  value?: unknown;
  reason?: string;
}

/** The channels the web processes listen on; a job's `replyTo` must be one (the worker publishes nowhere else). */
export const jobEndsChannelPattern = () => new RegExp(`^${escapeRegExp(config().queuePrefix)}:job-ends:[0-9a-f-]{36}$`);
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The subscriber connection's name in Redis's CLIENT LIST. */
export const jobEndsConnectionName = () => `job-ends-${process.pid}`;

/** The pauses before a waiter reads its job's state: at 2, 4 and 8 s, then every 8 s. */
const CHECK_GAPS_MS = [2000, 2000, 4000, 8000];

interface Waiter {
  settle(end: JobEnd): void;
  check(): void;
}

/** A caller's way to read a job's end from Redis: undefined while the job has not ended (or is not there yet). */
type ReadEnd = () => Promise<JobEnd | undefined>;

let sub: Redis | undefined;
let subscribed: Promise<string> | undefined;
const waiters = new Map<string, Waiter>();

/**
 * This process's channel, once its subscription holds (the caller bounds the wait: the connection retries for ever
 * while Redis is away).
 */
export function jobEndsChannel(): Promise<string> {
  subscribed ??= (async () => {
    const channel = `${config().queuePrefix}:job-ends:${randomUUID()}`;
    const connection = (sub = createRedis('worker', jobEndsConnectionName()));
    connection.on('message', (from: string, message: string) => {
      if (from !== channel) return;
      let end: JobEnd;
      try {
        end = JSON.parse(message) as JobEnd;
      } catch {
        return;
      }
      waiters.get(end.id)?.settle(end);
    });
    let first = true;
    // ioredis subscribes again after a reconnection; what was published meanwhile is lost: every waiter reads its job
    connection.on('ready', () => {
      if (first) first = false;
      else for (const w of waiters.values()) w.check();
    });
    await connection.subscribe(channel);
    return channel;
  })().catch((err) => {
    const failed = sub;
    sub = undefined;
    subscribed = undefined;
    if (failed) failed.disconnect();
    throw err;
  });
  return subscribed;
}

/**
 * The end of job `jobId`: its return value, or a rejection with its failure message (or a time-out at `deadline`).
 * Registered before the job is added, it cannot miss a message; `readEnd` covers the messages lost, read after each
 * of `checkGapsMs` (the last repeated) and whenever the subscriber's connection comes back.
 */
export function waitForJobEnd(
  jobId: string,
  deadline: number,
  readEnd: ReadEnd,
  checkGapsMs: readonly number[] = CHECK_GAPS_MS,
): { finished: Promise<unknown>; stop(): void } {
  let stop = () => {};
  const finished = new Promise((resolve, reject) => {
    let step = 0;
    let checkTimer: NodeJS.Timeout | undefined;
    const settle = (end: JobEnd) => {
      stop();
      if (end.ok) resolve(end.value);
      else reject(new Error(end.reason || 'the job failed'));
    };
    const check = () => {
      void readEnd().then(
        (end) => end && waiters.get(jobId) === waiter && settle(end),
        () => undefined,
      );
    };
    const scheduleCheck = () => {
      const gap = checkGapsMs[Math.min(step++, checkGapsMs.length - 1)]!;
      checkTimer = setTimeout(() => {
        check();
        scheduleCheck();
      }, gap);
    };
    const waiter: Waiter = { settle, check };
    const timer = setTimeout(
      () => {
        stop();
        reject(new Error(`job ${jobId} timed out before finishing`));
      },
      Math.max(1, deadline - Date.now()),
    );
    stop = () => {
      clearTimeout(timer);
      clearTimeout(checkTimer);
      if (waiters.get(jobId) === waiter) waiters.delete(jobId);
    };
    waiters.set(jobId, waiter);
    scheduleCheck();
  });
  // a caller that gave up does not await it: its failure is no crash
  finished.catch(() => undefined);
  return { finished, stop };
}

/** Closes the subscriber connection (the web process's stopServer does); the next wait opens a new one. */
export async function closeJobEnds(): Promise<void> {
  const connection = sub;
  sub = undefined;
  subscribed = undefined;
  if (connection) await closeConnection(connection);
}
