import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../../shared/errors.js';
import { parseStrictJson } from './strictJson.js';

const BODY_LIMIT_BYTES = 1024 * 1024;

const hasBody = (ctx: Parameters<Middleware>[0]) => (ctx.request.length !== undefined ? ctx.request.length > 0 : ctx.get('transfer-encoding') !== '');

/** Only JSON whitespace (a body of spaces is no body). */
const isBlank = (body: Buffer) => body.every((b) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09);

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const readJsonBody: Middleware = async (ctx, next) => {
  if (!ctx.is('application/json', '+json')) throw unsupportedMediaType();
  if (ctx.request.length !== undefined && ctx.request.length > BODY_LIMIT_BYTES) throw payloadTooLarge();
  let body: Buffer;
  try {
    body = await getRawBody(ctx.req, { limit: BODY_LIMIT_BYTES, length: ctx.request.length });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') throw payloadTooLarge();
    throw badRequest(`request body could not be read: ${(err as Error).message}`);
  }
  if (isBlank(body)) return next();
  (ctx.request as { body?: unknown }).body = parseStrictJson(body);
  return next();
};

/** The one route whose body is not JSON: an OCSP request (DER, application/ocsp-request), which the route reads itself. */
const RAW_BODY_ROUTE = /^\/pki\/[^/]+\/ocsp\/?$/i;

/**
 * Parses a JSON request body into `ctx.request.body` (undefined when there is none). Non-JSON bodies are 415,
 * bodies over 1 MiB are 413, malformed JSON is 400, and so are bodies strictJson.ts refuses (not UTF-8, a key twice,
 * a lone surrogate or NUL in a string), naming the property. An OCSP request (RAW_BODY_ROUTE) is left to its route. A request without a body passes straight on (no promise of its own).
 */
export const jsonBody: Middleware = (ctx, next) =>
  METHODS_WITH_BODY.has(ctx.method) && hasBody(ctx) && !RAW_BODY_ROUTE.test(ctx.path) ? readJsonBody(ctx, next) : next();
