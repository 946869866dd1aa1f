import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { accessLogger } from '../../shared/logger.js';
import { observeHttp } from '../../shared/telemetry.js';
import { answeringErrors } from './errors.js';
import { routeOf } from './metrics.js';
import { loggedPath } from './requestContext.js';
import { securityHeaderSet } from './securityHeaders.js';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The four outermost per-request concerns in one pass (one async frame and one promise instead of four middlewares):
 * - the request id (a sane incoming x-request-id or a new UUID) in `ctx.state.requestId` and the x-request-id header
 *   (requestLog binds the request's logger to it);
 * - the security headers (helmet's set, securityHeaders.ts) and `Cache-Control: no-store`, set before the request is
 *   handled so that an error answer carries them too; a route that chooses its own cache policy replaces the latter
 *   (API answers carry tokens, JWTs and keys that no shared cache or browser history should keep);
 * - every error mapped to `{error, message}` (errors.ts answeringErrors);
 * - then one access-log line (asynchronous, shared/logger.ts) and the HTTP metrics from the final status.
 */
export const requestEdge: Middleware = async (ctx, next) => {
  const started = performance.now();
  const req = ctx.req;
  const res = ctx.res;
  const incoming = req.headers['x-request-id'];
  const requestId = typeof incoming === 'string' && SAFE_ID.test(incoming) ? incoming : randomUUID();
  ctx.state.requestId = requestId;
  res.setHeader('x-request-id', requestId);
  const headers = securityHeaderSet(ctx.path);
  for (let i = 0; i < headers.remove.length; i++) res.removeHeader(headers.remove[i]!);
  const set = headers.set;
  for (let i = 0; i < set.length; i++) res.setHeader(set[i]![0], set[i]![1]);
  res.setHeader('Cache-Control', 'no-store');
  let status = 500;
  try {
    await answeringErrors(ctx, next);
    status = ctx.status;
  } finally {
    if (accessLogger.isLevelEnabled('info')) {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      // the route template, never the raw path or query: both may carry tokens
      accessLogger.info({ reqId: requestId, method: ctx.method, path: loggedPath(ctx as never), status: ctx.status, ms }, 'request');
    }
    observeHttp(routeOf(ctx as never), ctx.method, status, (performance.now() - started) / 1000);
  }
};
