import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { config } from '../../shared/config.js';
import { logger } from '../../shared/logger.js';
import { createRedis, stopReconnecting } from '../../shared/redis.js';
import { settleWithin } from '../../shared/timeouts.js';

/**
 * Every queue of the system. A job type is `<queue>.<name>` (e.g. `ipsec.provisionTunnel`); its processor lives in
 * workers/processors/. bull-board and the workers both read this list.
 */
/**
 * One queue per job family (the part of a job type before the dot). `system` holds no job of the service's own (tests
 * run sample jobs there); it is left out of the queue UI, where it could only show "No workers".
 */
const QUEUE_NAMES = ['system', 'pki', 'ipsec', 'frontends', 'shares', 'health-checks', 'metrics'] as const;
export const BOARD_QUEUES = QUEUE_NAMES.filter((n) => n !== 'system');
export type QueueName = (typeof QUEUE_NAMES)[number];

export function queueOfType(type: string): QueueName {
  const name = type.slice(0, type.indexOf('.'));
  if (!(QUEUE_NAMES as readonly string[]).includes(name)) throw new Error(`job type '${type}' names no known queue`);
  return name as QueueName;
}

const queues = new Map<QueueName, Queue>();
/** The queues whose producer connection has been ready at least once. */
const connected = new WeakSet<Queue>();

export function queue(name: QueueName): Queue {
  let q = queues.get(name);
  if (!q) {
    const connection = createRedis('producer');
    const made = new Queue(name, { connection, prefix: config().queuePrefix });
    connection.once('ready', () => connected.add(made));
    made.on('error', () => {
      /* surfaced through failed add() calls */
    });
    queues.set(name, made);
    q = made;
  }
  return q;
}

/** The connection attempt a never-ready queue's callers wait on together: it settles when the attempt ends. */
const attempts = new WeakMap<Queue, Promise<void>>();

const notReady = (connection: Redis) => new Error(`the job queue's connection to Redis is not ready (${connection.status})`);

function attemptOf(q: Queue, connection: Redis): Promise<void> {
  let attempt = attempts.get(q);
  if (!attempt) {
    attempt = new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => {
        connection.off('ready', onReady);
        connection.off('close', onClose);
        attempts.delete(q);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => settle();
      const onClose = () => settle(notReady(connection));
      connection.once('ready', onReady);
      connection.once('close', onClose);
    });
    attempts.set(q, attempt);
  }
  return attempt;
}

/** How long a caller of connectedQueue waits, at most, for a connection attempt under way. */
export const QUEUE_READY_TIMEOUT_MS = 3000;

/**
 * The queue `name` once its producer connection has been ready at least once; else a rejection, at once when Redis
 * was already found away, or when the connection attempt under way fails, or after `timeoutMs`. BullMQ holds every
 * call of a queue until its connection is first ready, however long Redis is away; after that, the connection
 * refuses at once while Redis is away (no offline queue). So a queue first made during an outage would keep each
 * call waiting, and each job's data with it, until Redis is back. Callers that must not wait through an outage
 * (adding a job, the sweeper's and the reconciliation's look-ups, a health check's job scheduler) take the queue
 * from here: nothing of theirs is left waiting.
 */
export async function connectedQueue(name: QueueName, timeoutMs = QUEUE_READY_TIMEOUT_MS): Promise<Queue> {
  const q = queue(name);
  if (connected.has(q)) return q;
  const connection = q.opts.connection as unknown as Redis;
  // ioredis sets the status at once and emits 'ready' on the next tick: ready already, not yet in `connected`
  if (connection.status === 'ready') {
    connected.add(q);
    return q;
  }
  // between attempts (Redis refused the last one): no wait
  if (connection.status !== 'connecting' && connection.status !== 'connect' && connection.status !== 'wait') throw notReady(connection);
  await settleWithin(attemptOf(q, connection), timeoutMs, () => notReady(connection));
  return q;
}

/**
 * Whether the producer connection of each queue `names` is ready now: false at once while Redis is away, after a wait
 * of at most `timeoutMs` for a first connection attempt under way. For readers that would otherwise wait for Redis
 * (a queue never connected holds its calls) or fail inside a library (a connection lost refuses them).
 */
export async function queuesReady(names: readonly QueueName[], timeoutMs = QUEUE_READY_TIMEOUT_MS): Promise<boolean> {
  try {
    const queues = await Promise.all(names.map((name) => connectedQueue(name, timeoutMs)));
    return queues.every((q) => (q.opts.connection as unknown as Redis).status === 'ready');
  } catch {
    return false;
  }
}

/** How long a BullMQ Queue, Worker or QueueEvents is given to close before its connection is dropped. */
const CLOSE_GRACE_MS = 5000;

/**
 * Closes a BullMQ Queue/Worker/QueueEvents and the connection we gave it (BullMQ leaves given connections open).
 * BullMQ's close() does not return while the connection is reconnecting, nor for a moment after Redis is back (a
 * worker measured: 10 s and more), so a process stopping during an outage would wait out its whole grace period: it
 * waits CLOSE_GRACE_MS at most (a worker's running jobs finish within it, or are taken over once their lock expires,
 * as after a crash), then drops the connection. A connection that is not ready is dropped, not asked to QUIT (the
 * command would wait in its queue for Redis). The grace is an option, never a second positional argument: a
 * positional one took each array index of `list.map(closeWithConnection)`, and gave the first queue 0 ms.
 */
export async function closeWithConnection(
  owner: { close(): Promise<void>; opts: { connection?: unknown } },
  { graceMs = CLOSE_GRACE_MS }: { graceMs?: number } = {},
): Promise<void> {
  // neither the connection nor BullMQ's copies of it (a worker's blocking connection) may reconnect from now on
  stopReconnecting(owner.opts.connection);
  const closed = owner.close().catch(() => undefined);
  const inTime = await settleWithin(closed, graceMs, () => new Error('not closed in time')).then(
    () => true,
    () => false,
  );
  const connection = owner.opts.connection as { status?: string; quit?: () => Promise<unknown>; disconnect?: () => void } | undefined;
  if (!inTime) logger.warn({ graceMs, redis: connection?.status }, 'a job queue did not close in time; its connection is dropped');
  if (!inTime || connection?.status !== 'ready') connection?.disconnect?.();
  else await connection.quit?.().catch(() => connection.disconnect?.());
}

export function allQueues(): Queue[] {
  return QUEUE_NAMES.map((n) => queue(n));
}

export async function closeQueues(): Promise<void> {
  const open = [...queues.values()];
  queues.clear();
  await Promise.all(open.map((q) => closeWithConnection(q)));
}
