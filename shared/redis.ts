import { Redis, type RedisOptions } from 'ioredis';
import { config } from './config.js';

export function redisUrl(): string {
  const url = config().redisUrl;
  if (!url) throw new Error('REDIS_URL is not set (npm start sets it for the redis-server it starts)');
  return url;
}

/**
 * A new connection. Workers need `maxRetriesPerRequest: null` (blocking commands); producers and probes fail fast
 * instead of queueing commands while Redis is away.
 */
export function createRedis(kind: 'worker' | 'producer'): Redis {
  const options: RedisOptions =
    kind === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, retryStrategy: (n) => Math.min(n * 200, 2000) };
  const client = new Redis(redisUrl(), options);
  client.on('error', () => {
    /* reported through failed commands and /healthz; an unhandled 'error' event would crash the process */
  });
  return client;
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
  if (r) await r.quit().catch(() => r.disconnect());
}
