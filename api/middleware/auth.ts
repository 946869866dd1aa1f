import type { Context, Middleware, Next } from 'koa';
import { QueryTypes } from 'sequelize';
import { config } from '../../shared/config.js';
import { db } from '../../shared/db.js';
import { ApiError, forbidden, unauthorized } from '../../shared/errors.js';
import { Hub } from '../../shared/models/Hub.js';
import { safeEqual, sha256 } from '../../shared/secrets.js';

export type Principal =
  | { kind: 'admin'; name: 'admin' }
  | { kind: 'apikey'; keyId: string; hubId: string; name: string };

type Credentials = { scheme: 'bearer'; token: string } | { scheme: 'basic'; username: string; token: string };

/** `Bearer <token>` or `Basic base64(user:token)`, exactly one space after the scheme. */
export function parseAuthorization(header: string): Credentials {
  if (!header) throw unauthorized('bearer token missing or invalid: no Authorization header');
  const match = /^(Bearer|Basic) ([^\s]+)$/i.exec(header);
  if (!match) throw unauthorized('malformed Authorization header: expected "Bearer <token>" or "Basic <base64(user:token)>"');
  const [, scheme, value] = match;
  if (scheme.toLowerCase() === 'bearer') return { scheme: 'bearer', token: value };
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value)) throw unauthorized('malformed Authorization header: Basic credentials are not base64');
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon === decoded.length - 1) throw unauthorized('malformed Authorization header: Basic credentials must be username:token');
  return { scheme: 'basic', username: decoded.slice(0, colon), token: decoded.slice(colon + 1) };
}

interface KeyRow {
  id: string;
  hub_id: string;
  username: string;
  token_hash: Buffer;
}

/** Resolves credentials to a principal, or throws 401. The admin token is compared in constant time. */
export async function authenticate(header: string): Promise<Principal> {
  const creds = parseAuthorization(header);
  if (safeEqual(creds.token, config().adminToken) && (creds.scheme === 'bearer' || creds.username === 'admin')) {
    return { kind: 'admin', name: 'admin' };
  }
  const hash = sha256(creds.token);
  // lookup by the token's digest: the comparison the database makes is on a hash, which leaks nothing of the token
  const [row] = await db().query<KeyRow>(
    'SELECT id, hub_id, username, token_hash FROM api_keys WHERE token_hash = :hash AND revoked_at IS NULL',
    { replacements: { hash }, type: QueryTypes.SELECT },
  );
  if (!row) throw unauthorized('bearer token missing or invalid');
  if (creds.scheme === 'basic' && !safeEqual(creds.username, row.username)) throw unauthorized('bearer token missing or invalid');
  return { kind: 'apikey', keyId: row.id, hubId: row.hub_id, name: row.username };
}

/** Operator routes: the admin token only. Browsers get a Basic challenge (user `admin`) for the queue UI. */
export const requireAdmin: Middleware = async (ctx, next) => {
  let principal: Principal;
  try {
    principal = await authenticate(ctx.get('authorization'));
  } catch (err) {
    if (err instanceof ApiError && ctx.path.startsWith('/admin/queues')) {
      throw new ApiError(err.status, err.code, err.message, { 'WWW-Authenticate': 'Basic realm="edgehub operator", charset="UTF-8"' });
    }
    throw err;
  }
  if (principal.kind !== 'admin') throw forbidden('the operator API needs the admin token');
  ctx.state.principal = principal;
  await next();
};

/**
 * Hub routes: authenticates, then admits the caller to `:hubId` only when the key belongs to that hub (or it is the
 * operator) and the hub exists. The hub is then `ctx.state.hub`; every query scopes by it through api/scope.ts.
 */
export const requireHub: Middleware = async (ctx, next) => {
  const principal = await authenticate(ctx.get('authorization'));
  const hubId = ctx.params.hubId as string;
  if (principal.kind === 'apikey' && principal.hubId !== hubId) throw forbidden();
  const hub = await Hub.findByPk(hubId);
  if (!hub) throw forbidden();
  ctx.state.principal = principal;
  ctx.state.hub = hub;
  await next();
};

/** Account routes without a hub in the path (e.g. `/account/frontends`): the API key's own hub. */
export const requireAccount: Middleware = async (ctx, next) => {
  const principal = await authenticate(ctx.get('authorization'));
  if (principal.kind !== 'apikey') throw forbidden('account routes need a hub API key; operators use /hub/{hubId}/...');
  const hub = await Hub.findByPk(principal.hubId);
  if (!hub) throw forbidden();
  ctx.state.principal = principal;
  ctx.state.hub = hub;
  await next();
};

export const principalName = (ctx: Context): string => (ctx.state.principal as Principal).name;

export type { Next };
