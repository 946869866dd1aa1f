/**
 * A policy's rate limit, counted across every edge in Redis (rate-limiter-flexible, fixed windows; keys carry the hub,
 * the share and the client). While Redis does not answer (away, not reached yet, or slower than REDIS_WAIT_MS) each
 * edge counts in its own memory instead: the limit holds per edge, never lapses. A client refused is remembered here
 * until its window ends, so that its further requests are refused without a Redis round trip.
 *
 * A limit of 200 or more is taken from Redis in leases of 1% of it (LEASE_SHARE): the edge counts a lease's requests
 * in memory and goes back to Redis when it is used up, so a busy client costs a round trip per lease, not per
 * request. Every request is counted in Redis before it passes: the edges together never admit more than the limit;
 * they may admit less by what their leases hold unused when the window ends (at most 1% of the limit per edge).
 */
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { config } from '../../shared/config.js';
import { createRedis, redisConfigured, stopReconnecting } from '../../shared/redis.js';

/** How long a count waits for Redis before this edge's memory counts it instead. */
const REDIS_WAIT_MS = 250;
/** The part of a limit an edge takes from Redis at a time. */
const LEASE_SHARE = 0.01;

interface Lease {
  left: number;
  /** The end of the window the lease was taken in (ms since epoch). */
  until: number;
}

interface Limiters {
  redis: RateLimiterRedis | undefined;
  memory: RateLimiterMemory;
}

export class PolicyRateLimiter {
  private client: Redis | undefined;
  private readonly limiters = new Map<string, Limiters>();
  /** Keys refused until an instant (ms since epoch). */
  private readonly blocked = new Map<string, number>();
  /** Requests taken from Redis and not used yet, by key. */
  private readonly leases = new Map<string, Lease>();
  /** A lease being taken, by key: the key's other requests wait for it rather than take one each. */
  private readonly taking = new Map<string, Promise<unknown>>();
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
    const lease = this.leases.get(key);
    if (lease && lease.left > 0 && lease.until > now) {
      lease.left--;
      return 0;
    }
    const taking = this.taking.get(key);
    if (taking) return taking.then(() => this.consume(key, points, seconds));
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
    const chunk = Math.max(1, Math.floor(points * LEASE_SHARE));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), REDIS_WAIT_MS);
    });
    const counted = Promise.race([l.redis.consume(key, chunk), late]).then(
      (res) => {
        clearTimeout(timer);
        if (res === 'late') return inMemory();
        // this request is one of the chunk; the others are the lease
        if (chunk > 1) this.lease(key, chunk - 1, Date.now() + res.msBeforeNext);
        return 0;
      },
      (res) => {
        clearTimeout(timer);
        return res instanceof RateLimiterRes ? refused(res.msBeforeNext) : inMemory();
      },
    );
    if (chunk > 1) {
      this.taking.set(key, counted);
      void counted.finally(() => this.taking.delete(key));
    }
    return counted;
  }

  private lease(key: string, left: number, until: number): void {
    if (this.leases.size >= 100_000) {
      const now = Date.now();
      for (const [k, l] of this.leases) if (l.until <= now || !l.left) this.leases.delete(k);
    }
    this.leases.set(key, { left, until });
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
