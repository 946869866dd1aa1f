import { Queue } from 'bullmq';
import { config } from './config.js';
import { createRedis } from './redis.js';

/**
 * Every queue of the system. A job type is `<queue>.<name>` (e.g. `ipsec.provisionTunnel`); its processor lives in
 * workers/processors/. bull-board and the workers both read this list.
 */
/**
 * One queue per job family (the part of a job type before the dot). `system` holds no job of the service's own (tests
 * run sample jobs there); it is left out of the queue UI, where it could only show "No workers".
 */
export const QUEUE_NAMES = ['system', 'pki', 'ipsec', 'frontends', 'shares', 'health-checks', 'metrics'] as const;
export const BOARD_QUEUES = QUEUE_NAMES.filter((n) => n !== 'system');
export type QueueName = (typeof QUEUE_NAMES)[number];

export function queueOfType(type: string): QueueName {
  const name = type.slice(0, type.indexOf('.'));
  if (!(QUEUE_NAMES as readonly string[]).includes(name)) throw new Error(`job type '${type}' names no known queue`);
  return name as QueueName;
}

const queues = new Map<QueueName, Queue>();

export function queue(name: QueueName): Queue {
  let q = queues.get(name);
  if (!q) {
    q = new Queue(name, { connection: createRedis('producer'), prefix: config().queuePrefix });
    q.on('error', () => {
      /* surfaced through failed add() calls */
    });
    queues.set(name, q);
  }
  return q;
}

/** Closes a BullMQ Queue/Worker/QueueEvents and the connection we gave it (BullMQ leaves given connections open). */
export async function closeWithConnection(owner: { close(): Promise<void>; opts: { connection?: unknown } }): Promise<void> {
  await owner.close().catch(() => undefined);
  const connection = owner.opts.connection as { quit?: () => Promise<unknown>; disconnect?: () => void } | undefined;
  await connection?.quit?.().catch(() => connection.disconnect?.());
}

export function allQueues(): Queue[] {
  return QUEUE_NAMES.map((n) => queue(n));
}

export async function closeQueues(): Promise<void> {
  const open = [...queues.values()];
  queues.clear();
  await Promise.all(open.map(closeWithConnection));
}
