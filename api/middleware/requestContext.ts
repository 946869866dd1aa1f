import type { Context } from 'koa';
import { logger, type Logger } from '../../shared/logger.js';

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
