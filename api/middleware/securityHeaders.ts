import type { Middleware } from 'koa';
import helmet from 'koa-helmet';

/** Pages that render HTML with their own scripts and styles (the queue UI, an API docs page): no strict CSP there. */
const HTML_PAGES = /^\/(?:admin\/queues|docs)(?:\/|$)/i;

/** JSON answers: nothing may be loaded, framed or sniffed from them. */
const forApi = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
});
const forPages = helmet({ contentSecurityPolicy: false, frameguard: { action: 'deny' }, referrerPolicy: { policy: 'no-referrer' } });

/**
 * Security headers on every response (helmet's set: nosniff, frame denial, no referrer, HSTS, cross-origin
 * isolation, ...), and `Cache-Control: no-store` on answers that did not choose a cache policy: API answers carry
 * tokens, JWTs and keys that no shared cache or browser history should keep.
 */
export const securityHeaders: Middleware = async (ctx, next) => {
  await (HTML_PAGES.test(ctx.path) ? forPages : forApi)(ctx, async () => undefined);
  try {
    await next();
  } finally {
    if (!ctx.response.get('Cache-Control')) ctx.set('Cache-Control', 'no-store');
  }
};
