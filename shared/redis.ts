import { Redis, type RedisOptions } from 'ioredis';
import { config } from './config.js';
import { followMasterSwitches, sentinelOptions } from './redisSentinel.js';

/** Whether this deployment has a Redis: a URL or Sentinels. */
export function redisConfigured(): boolean {
  const c = config();
  return Boolean(c.redisUrl || c.redisSentinel);
}

function redisUrl(): string {
  const url = config().redisUrl;
  if (!url) throw new Error('REDIS_URL is not set (npm start sets it for the redis-server it starts)');
  return url;
}

/** Whether the owner of a connection (and of the copies BullMQ made of it) is closing it. */
interface Closing {
  closing: boolean;
}

/**
 * An ioredis connection that can always be closed, and whose copies can too.
 *
 * - Its retry strategy ends the connection instead of reconnecting once its owner is closing it (`stopReconnecting`).
 * - ioredis's `disconnect()` during the wait between two reconnection attempts cancels the next attempt and leaves
 *   the connection `reconnecting` for ever, without the 'end' event (redis/ioredis#1247). BullMQ closes a worker by
 *   disconnecting its blocking connection and waiting for that 'end': a worker closed while Redis was away never
 *   finished closing, its stalled-job check and lock renewal timers ran on, and the process never exited (a test
 *   process outlived its tests). Here such a disconnect lets the pending attempt run: it ends the connection (the
 *   retry strategy says so), or, when Redis is back, it is disconnected as soon as it connects.
 * - With Sentinel, it follows the master's moves (shared/redisSentinel.ts).
 * - BullMQ makes its own connections as copies of the one it is given (`duplicate()`): the copies are of this class
 *   and share the owner's state, so closing the owner's connection ends theirs too.
 */
class ClosableRedis extends Redis {
  constructor(
    url: string | undefined,
    options: RedisOptions,
    readonly closingState: Closing,
  ) {
    if (url === undefined) super(options);
    else super(url, options);
    if (options.sentinels) followMasterSwitches(this);
  }

  override disconnect(reconnect = false): void {
    if (!reconnect && this.status === 'reconnecting') {
      this.closingState.closing = true;
      this.once('connect', () => super.disconnect());
      return;
    }
    super.disconnect(reconnect);
  }

  override duplicate(override?: Partial<RedisOptions>): Redis {
    return new ClosableRedis(undefined, { ...this.options, ...override }, this.closingState);
  }
}

/**
 * A new connection. Workers need `maxRetriesPerRequest: null` (blocking commands); producers and probes fail fast
 * instead of queueing commands while Redis is away. Either reconnects while Redis is away until its owner closes it.
 * `name`: the connection's name in Redis's CLIENT LIST (set again on each reconnection).
 */
export function createRedis(kind: 'worker' | 'producer', name?: string): Redis {
  const state: Closing = { closing: false };
  const delay = kind === 'worker' ? (n: number) => Math.min(n * 50, 2000) : (n: number) => Math.min(n * 200, 2000);
  const retryStrategy = (n: number) => (state.closing ? null : delay(n));
  const options: RedisOptions =
    kind === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true, retryStrategy }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, retryStrategy };
  if (name !== undefined) options.connectionName = name;
  const sentinel = config().redisSentinel;
  const client = sentinel
    ? new ClosableRedis(undefined, { ...options, ...sentinelOptions(sentinel, () => state.closing) }, state)
    : new ClosableRedis(redisUrl(), options, state);
  client.on('error', () => {
    /* reported through failed commands and /healthz; an unhandled 'error' event would crash the process */
  });
  return client;
}

/**
 * The owner of `connection` (one made by createRedis) is closing it: from now on a lost connection, or one BullMQ
 * copied from it, ends instead of reconnecting, and the commands waiting for a reconnection fail.
 */
export function stopReconnecting(connection: unknown): void {
  if (connection instanceof ClosableRedis) connection.closingState.closing = true;
}

let shared: Redis | undefined;

/** One fail-fast connection for the process: caches, locks, health probe. */
export function redis(): Redis {
  shared ??= createRedis('producer');
  return shared;
}

/**
 * The shared connection once it is ready. It fails fast (no offline queue), so a command sent before the first
 * connect completes would fail: wait for 'ready' up to `timeoutMs` instead.
 */
export async function readyRedis(timeoutMs = 2000): Promise<Redis> {
  const client = redis();
  if (client.status === 'ready') return client;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`redis not ready within ${timeoutMs} ms (${client.status})`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
  return client;
}

export async function closeRedis(): Promise<void> {
  const r = shared;
  shared = undefined;
  if (r) await closeConnection(r);
}

/**
 * Closes a connection made by createRedis for good: no reconnection from now on; QUIT when it is ready, dropped
 * otherwise (a QUIT would wait for Redis) or when QUIT fails.
 */
export async function closeConnection(connection: Redis): Promise<void> {
  stopReconnecting(connection);
  if (connection.status !== 'ready') connection.disconnect();
  else await connection.quit().catch(() => connection.disconnect());
}
