import { Redis, type RedisOptions } from 'ioredis';
import { config } from './config.js';
import { logger } from './logger.js';
import { logThrottle } from './logThrottle.js';

/** Whether this deployment has a Redis: a URL or Sentinels. */
export function redisConfigured(): boolean {
  const c = config();
  return Boolean(c.redisUrl || c.redisSentinel);
}

export function redisUrl(): string {
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
 */
export function createRedis(kind: 'worker' | 'producer'): Redis {
  const state: Closing = { closing: false };
  const delay = kind === 'worker' ? (n: number) => Math.min(n * 50, 2000) : (n: number) => Math.min(n * 200, 2000);
  const retryStrategy = (n: number) => (state.closing ? null : delay(n));
  const options: RedisOptions =
    kind === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true, retryStrategy }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, retryStrategy };
  const sentinel = config().redisSentinel;
  const client = sentinel
    ? new ClosableRedis(undefined, { ...options, ...sentinelOptions(sentinel, state) }, state)
    : new ClosableRedis(redisUrl(), options, state);
  client.on('error', () => {
    /* reported through failed commands and /healthz; an unhandled 'error' event would crash the process */
  });
  return client;
}

const masterAway = logThrottle(30_000);

/**
 * ioredis's Sentinel mode: each connection asks the sentinels for the master's address whenever it connects. A master
 * that dies drops its connections, which then ask again. A master that is demoted while it lives (a failover after a
 * partition, or by hand) answers writes with READONLY and ends blocked commands with UNBLOCKED (Redis 6.2 and later):
 * either error makes the connection reconnect, and so ask the sentinels, and the command is sent again, so no
 * connection (a worker's blocking one included) stays on a demoted master. While no sentinel answers a connection
 * keeps asking (said once each 30 s), until its owner closes it.
 *
 * ioredis's own `failoverDetector` (subscriptions to +switch-master) is not used: its connections to the sentinels
 * are closed only by `disconnect()`, not when a connection ends by QUIT (how BullMQ closes its own), and went on
 * reconnecting to the sentinels after everything was closed.
 */
function sentinelOptions(sentinel: NonNullable<ReturnType<typeof config>['redisSentinel']>, state: Closing): RedisOptions {
  return {
    sentinels: sentinel.sentinels,
    name: sentinel.name,
    sentinelPassword: sentinel.sentinelPassword,
    password: sentinel.password,
    reconnectOnError: (err: Error) => (/^(READONLY|UNBLOCKED)/.test(err.message) ? 2 : false),
    sentinelRetryStrategy: (n: number) => {
      if (state.closing) return null;
      masterAway(`sentinels ${sentinel.name}`, (repeated) => logger.warn({ master: sentinel.name, repeated }, 'no sentinel answers; asking again'));
      return Math.min(n * 100, 2000);
    },
  };
}

/**
 * For a process's main when REDIS_SENTINELS is set: unless at least one sentinel answers and names the master, says why
 * in one line naming the setting and exits with status 2 (a typo in the list would otherwise be retried for ever,
 * with every request that needs Redis answered 503). A master that is away while its sentinels answer is not a reason
 * to stop: connections wait for the sentinels to name one.
 */
export async function refuseUnreachableSentinels(): Promise<void> {
  const problem = await sentinelsProblem();
  if (!problem) return;
  console.error(`edgehub: ${problem}`);
  process.exit(2);
}

/** Why the configured sentinels cannot be used, or undefined when one answers and knows the master (or there are none). */
export async function sentinelsProblem(timeoutMs = 3000): Promise<string | undefined> {
  const sentinel = config().redisSentinel;
  if (!sentinel) return undefined;
  const failures: string[] = [];
  let unknownMaster = false;
  for (const { host, port } of sentinel.sentinels) {
    const probe = new Redis({ host, port, password: sentinel.sentinelPassword, lazyConnect: true, connectTimeout: timeoutMs, commandTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      const master = (await probe.call('SENTINEL', 'get-master-addr-by-name', sentinel.name)) as string[] | null;
      if (master) return undefined;
      unknownMaster = true;
      failures.push(`${host}:${port}: knows no master named ${sentinel.name}`);
    } catch (err) {
      failures.push(`${host}:${port}: ${(err as Error).message}`);
    } finally {
      probe.disconnect();
    }
  }
  return unknownMaster
    ? `REDIS_SENTINEL_NAME: the sentinels of REDIS_SENTINELS know no master named ${sentinel.name} (${failures.join('; ')})`
    : `REDIS_SENTINELS: no sentinel answers (${failures.join('; ')})`;
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
  stopReconnecting(r);
  if (r) await r.quit().catch(() => r.disconnect());
}
