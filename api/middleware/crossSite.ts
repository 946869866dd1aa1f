import type { Context, Middleware } from 'koa';
import { config } from '../../shared/config.js';
import { refusal, unsupportedMediaType } from '../../shared/errors.js';

/**
 * No change of state from another site, on every route (the API, the operator API, the queue UI, the unauthenticated
 * enrollment and agent routes alike). A browser adds the operator's Basic login (and the queue UI's cookie) to a
 * request any page sends, a form included; so a POST, PUT, PATCH or DELETE is refused, before anything reads it:
 *
 * - with an `Origin` that is not one of the service's own (403 `forbidden`, EH_ORIGIN_REFUSED): the origin of
 *   PUBLIC_BASE_URL, or the origin the request itself came to (its scheme and `Host`, which a page cannot set for a
 *   request to another origin), so that the console works at whatever address it was opened. `Origin: null` (a
 *   sandboxed page, a redirect across sites) is not an origin of ours;
 * - with `Sec-Fetch-Site: cross-site` or `same-site` (403): the browser says another origin sent it (a share's page
 *   under the API's own domain is same-site);
 * - with Basic credentials and no `Content-Type: application/json` (`+json` too), even without a body (415): an HTML
 *   form can send only url-encoded, multipart or text/plain, so a form can never carry Basic credentials through.
 *
 * A request without `Origin` and `Sec-Fetch-Site` is not a browser's cross-site one: curl, the agent and servers
 * send none and are served as before. Bearer tokens are never added by a browser on its own, so they need no JSON rule.
 */
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const OTHER_ORIGIN_FETCH = new Set(['cross-site', 'same-site']);

/** An origin in its serialised form (lower-case, default port dropped), or undefined when it is not one. */
function canonical(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

let base: { url: string; origin: string | undefined } | undefined;
/** PUBLIC_BASE_URL's origin (recomputed when the setting changes, as tests change it). */
export function publicOrigin(): string | undefined {
  const url = config().publicBaseUrl;
  if (base?.url !== url) base = { url, origin: canonical(url) };
  return base.origin;
}

/** Whether `origin` (an `Origin` header's value) is the service's own: PUBLIC_BASE_URL's, or the one this request came to. */
export function isOwnOrigin(ctx: Context, origin: string): boolean {
  const given = canonical(origin);
  if (!given || given !== origin.toLowerCase()) return false; // only an origin as a browser writes it
  return given === publicOrigin() || given === canonical(`${ctx.protocol}://${ctx.host}`);
}

/** `application/json` or a `+json` type, read from the header itself (Koa's ctx.is() says nothing without a body). */
function declaresJson(contentType: string): boolean {
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

const quoted = (value: string) => JSON.stringify(value.slice(0, 200));

export const refuseCrossSite: Middleware = (ctx, next) => {
  if (!STATE_CHANGING.has(ctx.method)) return next();
  const origin = ctx.get('origin');
  if (origin && !isOwnOrigin(ctx, origin)) {
    throw refusal('EH_ORIGIN_REFUSED', `a change of state must come from this service's own origin, not from Origin ${quoted(origin)}`);
  }
  const site = ctx.get('sec-fetch-site').toLowerCase();
  if (OTHER_ORIGIN_FETCH.has(site)) {
    throw refusal('EH_ORIGIN_REFUSED', `a change of state must come from this service's own origin, not from another (Sec-Fetch-Site: ${site})`);
  }
  if (/^basic /i.test(ctx.get('authorization')) && !declaresJson(ctx.get('content-type'))) {
    throw unsupportedMediaType(
      `a ${ctx.method} with Basic credentials must be sent with Content-Type: application/json, even without a body (got ${ctx.get('content-type') ? quoted(ctx.get('content-type')) : 'none'})`,
    );
  }
  return next();
};
