import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { accessLogEnabled, logAccess } from '../../shared/logger.js';
import { observeHttp } from '../../shared/telemetry/index.js';
import { answeringErrors } from './errors.js';
import { routeOf } from './routeLabel.js';
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
 * - a large JSON answer serialised here into a Buffer (sendLargeJsonAsBuffer below);
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
    sendLargeJsonAsBuffer(ctx);
  } finally {
    if (accessLogEnabled) {
      // the route template, never the raw path or query: both may carry tokens
      logAccess(requestId, ctx.method, loggedPath(ctx as never), ctx.status, Math.round((performance.now() - started) * 10) / 10);
    }
    observeHttp(routeOf(ctx as never), ctx.method, status, (performance.now() - started) / 1000);
  }
};

/** From this many characters of JSON on, the answer leaves as a Buffer (below it, both ways cost the same). */
export const LARGE_JSON_CHARS = 16 * 1024;

/**
 * Koa sends a JSON body as a string: it measures its UTF-8 length (a pass over the text), then node's http prepends
 * the header to it (a copy) and encodes it again on write. For a body of megabytes (sparklines of 1,000 shares: 1.7
 * MB) that costs more than the serialisation: a Buffer encoded once and written as it is saves ~1.1-1.5 ms of CPU
 * and ~1.5 ms of latency per 1.7 MB answer (measured with node:http on this machine). Small bodies are left to Koa.
 */
function sendLargeJsonAsBuffer(ctx: Context): void {
  const body = ctx.body;
  // plain objects and arrays only (what the presenters build); Koa sends anything else (streams, Buffers, Blobs) itself
  if (body === null || typeof body !== 'object' || !(Array.isArray(body) || Object.getPrototypeOf(body) === Object.prototype)) return;
  const text = JSON.stringify(body) as string | undefined;
  if (text === undefined) return;
  // the content type is already JSON (Koa set it when the object was assigned) and stays as it is
  ctx.body = text.length >= LARGE_JSON_CHARS ? Buffer.from(text) : text;
}
