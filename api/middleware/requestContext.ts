import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { logger } from '../../shared/logger.js';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Segments that carry a certificate request token string (token-in-path redemption and look-up). */
const TOKEN_SEGMENT = /\/(token|by-token)\/[^/]+/gi;

/**
 * What the access log names: the route template that matched (`/hub/v2/:hubId/client-certificates/token/:token`),
 * else the path with token segments replaced, so that a secret in a path never reaches a log line.
 */
export function loggedPath(ctx: { path: string; _matchedRoute?: string | RegExp }): string {
  if (typeof ctx._matchedRoute === 'string') return ctx._matchedRoute;
  return ctx.path.replace(TOKEN_SEGMENT, '/$1/[redacted]');
}

/** Gives every request an id (honouring a sane incoming x-request-id), a child logger, and one access-log line. */
export const requestContext: Middleware = async (ctx, next) => {
  const incoming = ctx.get('x-request-id');
  const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
  ctx.state.requestId = requestId;
  ctx.state.log = logger.child({ reqId: requestId });
  ctx.set('x-request-id', requestId);
  const started = process.hrtime.bigint();
  try {
    await next();
  } finally {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    // the route template, never the raw path or query: both may carry tokens
    ctx.state.log.info({ method: ctx.method, path: loggedPath(ctx as never), status: ctx.status, ms: Math.round(ms * 10) / 10 }, 'request');
  }
};
