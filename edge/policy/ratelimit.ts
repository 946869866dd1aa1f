/**
 * A policy's rate limit, counted across every edge in Redis (rate-limiter-flexible, fixed windows; keys carry the hub,
 * the share and the client). While Redis does not answer (away, not reached yet, or slower than REDIS_WAIT_MS) each
 * edge counts in its own memory instead: the limit holds per edge, never lapses. A client refused is remembered here
 * until its window ends, so that its further requests are refused without a Redis round trip.
 */
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { config } from '../../shared/config.js';
import { createRedis, redisConfigured, stopReconnecting } from '../../shared/redis.js';

/** How long a count waits for Redis before this edge's memory counts it instead. */
const REDIS_WAIT_MS = 250;

interface Limiters {
  redis: RateLimiterRedis | undefined;
  memory: RateLimiterMemory;
}

export class PolicyRateLimiter {
  private client: Redis | undefined;
  private readonly limiters = new Map<string, Limiters>();
  /** Keys refused until an instant (ms since epoch). */
  private readonly blocked = new Map<string, number>();
  private closed = false;

  /** `useRedis` false: this edge counts alone (no Redis configured). The connection is made now, ready by the first request. */
  constructor(useRedis = redisConfigured()) {
    if (useRedis) this.client = createRedis('producer');
  }

  private limitersFor(points: number, seconds: number): Limiters {
    const id = `${points}/${seconds}`;
    let l = this.limiters.get(id);
    if (!l) {
      const keyPrefix = `${config().queuePrefix}:edge-policy:${id}`;
      l = {
        redis: this.client ? new RateLimiterRedis({ storeClient: this.client, keyPrefix, points, duration: seconds, rejectIfRedisNotReady: true }) : undefined,
        memory: new RateLimiterMemory({ keyPrefix, points, duration: seconds }),
      };
      this.limiters.set(id, l);
    }
    return l;
  }

  /**
   * Counts one request of `key` against `points` per `seconds`: 0 when it may pass, else the milliseconds until it
   * may try again.
   */
  consume(key: string, points: number, seconds: number): number | Promise<number> {
    const now = Date.now();
    const until = this.blocked.get(key);
    if (until !== undefined) {
      if (until > now) return until - now;
      this.blocked.delete(key);
    }
    const l = this.limitersFor(points, seconds);
    const refused = (ms: number) => {
      const wait = Math.max(1, ms);
      if (this.blocked.size >= 100_000) for (const [k, at] of this.blocked) if (at <= now) this.blocked.delete(k);
      this.blocked.set(key, Date.now() + wait);
      return wait;
    };
    const inMemory = () =>
      l.memory.consume(key).then(
        () => 0,
        (res) => (res instanceof RateLimiterRes ? refused(res.msBeforeNext) : 0),
      );
    if (!l.redis) return inMemory();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), REDIS_WAIT_MS);
    });
    return Promise.race([l.redis.consume(key), late]).then(
      (res) => {
        clearTimeout(timer);
        return res === 'late' ? inMemory() : 0;
      },
      (res) => {
        clearTimeout(timer);
        return res instanceof RateLimiterRes ? refused(res.msBeforeNext) : inMemory();
      },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    stopReconnecting(client);
    await client.quit().catch(() => client.disconnect());
  }
}
