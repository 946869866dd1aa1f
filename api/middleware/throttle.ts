import type { Context, Middleware } from 'koa';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { config } from '../../shared/config.js';
import { isDomainError, rateLimited } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import { redis } from '../../shared/redis.js';
import type { SecurityConfig } from '../../shared/config.js';

/**
 * Per-client-address limits (the address is `ctx.ip`, which honours X-Forwarded-For only with HUB_TRUST_PROXY).
 *
 * - Authentication failures: every 401 counts one point for its address in Redis, so the count holds across web
 *   processes. An address over the limit is then blocked in the process that saw it until the window ends (a map
 *   lookup per request, no Redis round trip on the success path); another web process blocks it at its own next
 *   failure from that address. So at most limit + (web processes - 1) failures pass per window.
 * - Unauthenticated routes (enroll, token-in-path redemption, agent enrollment and renewal, JWKS, `/pki/`): every request counts, in process memory. These
 *   are the enrollment hot path, where a Redis round trip per request would cost throughput; each web process
 *   enforces the limit on its own, so behind N web processes an address may send up to N x the limit.
 *
 * Both answer 429 `too_many_requests` with Retry-After (seconds). A limit of 0 turns the limiter off. While Redis does
 * not answer (or has not been reached since the start), failures are counted in this process's memory instead, at
 * once: a 401 never waits for Redis, and the brake holds per process meanwhile.
 */

const tooMany = (what: string, msBeforeNext: number) => {
  const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return rateLimited(`${what}; retry after ${seconds} s`, seconds);
};

/** Addresses this process refuses until an instant (ms since epoch). Pruned as it is read. */
class BlockList {
  private readonly until = new Map<string, number>();

  get empty(): boolean {
    return this.until.size === 0;
  }

  msLeft(address: string, now = Date.now()): number {
    const at = this.until.get(address);
    if (at === undefined) return 0;
    if (at > now) return at - now;
    this.until.delete(address);
    return 0;
  }

  block(address: string, ms: number): void {
    if (this.until.size > 100_000) for (const [a, at] of this.until) if (at <= Date.now()) this.until.delete(a);
    this.until.set(address, Date.now() + ms);
  }
}

const isAuthFailure = (err: unknown) => isDomainError(err, 'EH_UNAUTHORIZED');

/** 429 for an address after `authFailureLimit` 401s within the window; counts in Redis (see above). */
export function authFailureThrottle(settings: Pick<SecurityConfig, 'authFailureLimit' | 'authFailureWindowSeconds'>): Middleware {
  if (settings.authFailureLimit === 0) return (_ctx, next) => next();
  let limiter: RateLimiterAbstract | undefined;
  // made at the first request, so that the shared connection is up by the first failure; it fails fast (no offline
  // queue), before its first connect too: the insurance counts while it is not ready
  const counter = () => {
    if (limiter) return limiter;
    const options = { keyPrefix: `${config().queuePrefix}:auth-failures`, points: settings.authFailureLimit, duration: settings.authFailureWindowSeconds };
    limiter = new RateLimiterRedis({ ...options, storeClient: redis(), insuranceLimiter: new RateLimiterMemory(options) });
    return limiter;
  };
  const blocked = new BlockList();
  const what = 'too many failed authentications from this address';

  async function countFailure(address: string): Promise<void> {
    try {
      await counter().consume(address);
    } catch (res) {
      if (res instanceof RateLimiterRes) {
        blocked.block(address, res.msBeforeNext);
        throw tooMany(what, res.msBeforeNext);
      }
      logger.warn({ err: (res as Error).message }, 'authentication failure not counted');
    }
  }

  return async (ctx: Context, next) => {
    if (!limiter) counter();
    const left = blocked.empty ? 0 : blocked.msLeft(ctx.ip);
    if (left > 0 && ctx.path !== '/healthz') throw tooMany(what, left);
    try {
      await next();
    } catch (err) {
      if (isAuthFailure(err)) await countFailure(ctx.ip);
      throw err;
    }
    if (ctx.status === 401) await countFailure(ctx.ip);
  };
}

/**
 * The routes that take no API key: enrollment, token-in-path redemption, agent enrollment and renewal, the JWKS, and
 * what the CAs publish (`/pki/...`: CRLs, CA certificates, OCSP).
 */
const UNAUTHENTICATED_ROUTE =
  /^\/hub\/(?:v2\/)?[^/]+\/client-certificates\/(?:enroll|token\/[^/]+)\/?$|^\/hub\/(?:v2\/)?[^/]+\/agents\/(?:enroll|[^/]+\/renew)\/?$|^\/hub\/v2\/public\/\.well-known\/jwks\.json$|^\/pki\//i;

/** 429 for an address over `unauthRateLimit` requests per window on the unauthenticated routes (in process). */
export function unauthenticatedLimit(settings: Pick<SecurityConfig, 'unauthRateLimit' | 'unauthRateWindowSeconds'>): Middleware {
  if (settings.unauthRateLimit === 0) return (_ctx, next) => next();
  const limiter = new RateLimiterMemory({ points: settings.unauthRateLimit, duration: settings.unauthRateWindowSeconds });
  const limited: Middleware = async (ctx, next) => {
    try {
      await limiter.consume(ctx.ip);
    } catch (res) {
      if (res instanceof RateLimiterRes) throw tooMany('too many requests to the unauthenticated routes from this address', res.msBeforeNext);
      throw res;
    }
    return next();
  };
  return (ctx, next) => (UNAUTHENTICATED_ROUTE.test(ctx.path) ? limited(ctx, next) : next());
}
