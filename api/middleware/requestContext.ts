import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { logger } from '../../shared/logger.js';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
    // path only: query strings may carry tokens
    ctx.state.log.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 }, 'request');
  }
};
