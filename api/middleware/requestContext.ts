import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { logger, type Logger } from '../../shared/logger.js';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (honouring a sane incoming x-request-id), a child logger, and one access-log line. The
 * child logger is made on first use (most requests never log anything but the access line, which needs none), and
 * the logger writes asynchronously (shared/logger.ts): logging costs the request little and never blocks it.
 */
export const requestContext: Middleware = async (ctx, next) => {
  const incoming = ctx.get('x-request-id');
  const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
  ctx.state.requestId = requestId;
  let child: Logger | undefined;
  Object.defineProperty(ctx.state, 'log', { get: () => (child ??= logger.child({ reqId: requestId })), configurable: true, enumerable: false });
  ctx.set('x-request-id', requestId);
  const started = process.hrtime.bigint();
  try {
    await next();
  } finally {
    if (logger.isLevelEnabled('info')) {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // path only: query strings may carry tokens
      logger.info({ reqId: requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 }, 'request');
    }
  }
};
