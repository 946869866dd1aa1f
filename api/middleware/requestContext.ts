import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
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

/** `ctx.state` of every request: its id, and a logger bound to that id, made on first use (most requests log nothing but the access line, which needs none). */
export class RequestState {
  [key: string]: unknown;
  private child?: Logger;
  constructor(readonly requestId: string) {}
  get log(): Logger {
    return (this.child ??= logger.child({ reqId: this.requestId }));
  }
}

/**
 * Gives every request an id (honouring a sane incoming x-request-id), a child logger, and one access-log line. The
 * logger writes asynchronously (shared/logger.ts): logging costs the request little and never blocks it.
 */
export const requestContext: Middleware = async (ctx, next) => {
  const incoming = ctx.get('x-request-id');
  const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
  ctx.state = new RequestState(requestId);
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
