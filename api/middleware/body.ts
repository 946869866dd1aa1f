import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../../shared/errors.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

const hasBody = (ctx: Parameters<Middleware>[0]) =>
  ctx.request.length !== undefined ? ctx.request.length > 0 : ctx.get('transfer-encoding') !== '';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const readJsonBody: Middleware = async (ctx, next) => {
  if (!ctx.is('application/json', '+json')) throw unsupportedMediaType();
  if (ctx.request.length !== undefined && ctx.request.length > BODY_LIMIT_BYTES) throw payloadTooLarge();
  let text: string;
  try {
    text = await getRawBody(ctx.req, { limit: BODY_LIMIT_BYTES, length: ctx.request.length, encoding: 'utf8' });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') throw payloadTooLarge();
    throw badRequest(`request body could not be read: ${(err as Error).message}`);
  }
  if (text.trim() === '') return next();
  try {
    (ctx.request as { body?: unknown }).body = JSON.parse(text);
  } catch {
    throw badRequest('request body is not valid JSON');
  }
  return next();
};

/**
 * Parses a JSON request body into `ctx.request.body` (undefined when there is none). Non-JSON bodies are 415,
 * bodies over 1 MiB are 413, malformed JSON is 400. A request without a body passes straight on (no promise of its own).
 */
export const jsonBody: Middleware = (ctx, next) => (METHODS_WITH_BODY.has(ctx.method) && hasBody(ctx) ? readJsonBody(ctx, next) : next());
