import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { accessLogger, logger, type Logger } from '../../shared/logger.js';

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

/** The request's logger, bound to its id: made on first use (most requests log nothing but the access line). */
export function requestLog(ctx: Context): Logger {
  const state = ctx.state as { requestId?: string; log?: Logger };
  return (state.log ??= state.requestId === undefined ? logger : logger.child({ reqId: state.requestId }));
}

/**
 * Gives every request an id (honouring a sane incoming x-request-id; `ctx.state.requestId`), a logger bound to it
 * (requestLog), and one access-log line. The logger writes asynchronously (shared/logger.ts): logging costs the
 * request little and never blocks it.
 */
export const requestContext: Middleware = async (ctx, next) => {
  const incoming = ctx.get('x-request-id');
  const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
  ctx.state.requestId = requestId;
  ctx.set('x-request-id', requestId);
  const started = performance.now();
  try {
    await next();
  } finally {
    if (accessLogger.isLevelEnabled('info')) {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      // the route template, never the raw path or query: both may carry tokens
      accessLogger.info({ reqId: requestId, method: ctx.method, path: loggedPath(ctx as never), status: ctx.status, ms }, 'request');
    }
  }
};
