import { timingSafeEqual } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import { config } from '../../shared/config.js';
import { preparedQuery } from '../../shared/db.js';
import { notAuthorized, refusal, unauthorized } from '../../shared/errors.js';
import { safeEqual, sha256 } from '../../shared/secrets.js';
import { cachedHub, cachedKey, peekHub, peekKey, type CachedHub, type CachedKey } from './authCache.js';

export type Principal = { kind: 'admin'; name: 'admin' } | { kind: 'apikey'; keyId: string; hubId: string; name: string };

type Credentials = { scheme: 'bearer'; token: string } | { scheme: 'basic'; username: string; token: string };

/** `Bearer <token>` or `Basic base64(user:token)`, exactly one space after the scheme. */
function parseAuthorization(header: string): Credentials {
  if (!header) throw unauthorized('bearer token missing or invalid: no Authorization header');
  const match = /^(Bearer|Basic) ([^\s]+)$/i.exec(header);
  if (!match) throw refusal('EH_AUTHORIZATION_MALFORMED', 'malformed Authorization header: expected "Bearer <token>" or "Basic <base64(user:token)>"');
  const [, scheme, value] = match;
  if (scheme.toLowerCase() === 'bearer') return { scheme: 'bearer', token: value };
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value)) throw refusal('EH_AUTHORIZATION_MALFORMED', 'malformed Authorization header: Basic credentials are not base64');
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon === decoded.length - 1)
    throw refusal('EH_AUTHORIZATION_MALFORMED', 'malformed Authorization header: Basic credentials must be username:token');
  return { scheme: 'basic', username: decoded.slice(0, colon), token: decoded.slice(colon + 1) };
}

interface KeyRow {
  id: string;
  hub_id: string;
  username: string;
  hub_name: string;
  hub_features: CachedHub['features'];
}

/**
 * The key's row together with its hub's, in one round trip: a cold cache costs one query, a warm one none. The
 * lookup is by the token's digest: the comparison the database makes is on a hash, which leaks nothing of the token.
 */
const KEY_SQL = `SELECT k.id, k.hub_id, k.username, h.name AS hub_name, h.features AS hub_features
  FROM api_keys k JOIN hubs h ON h.id = k.hub_id WHERE k.token_hash = $1 AND k.revoked_at IS NULL`;
const HUB_SQL = 'SELECT id, name, features FROM hubs WHERE id = $1';

const hubInfo = (id: string, name: string, features: CachedHub['features'] | null): CachedHub => ({ id, name, features: { ipsec: Boolean(features?.ipsec) } });

/** The hub with this id (cached; see authCache.ts), or undefined. */
function findHubInfo(id: string): Promise<CachedHub | undefined> {
  const hit = peekHub(id);
  if (hit) return Promise.resolve(hit);
  return cachedHub(id, async () => {
    const [row] = await preparedQuery<{ id: string; name: string; features: CachedHub['features'] }>('auth-hub', HUB_SQL, [id]);
    return row && hubInfo(row.id, row.name, row.features);
  });
}

let adminDigest: { token: string; digest: Buffer } | undefined;
const adminTokenDigest = (): Buffer => {
  const token = config().adminToken;
  if (adminDigest?.token !== token) adminDigest = { token, digest: sha256(token) };
  return adminDigest.digest;
};

/**
 * Resolves credentials to a principal, or throws 401. The admin token is compared in constant time. Answers at once
 * (no promise) when no query is needed: the admin token, or a key the cache holds (the hot path of every request).
 */
export function authenticate(header: string): Principal | Promise<Principal> {
  const creds = parseAuthorization(header);
  // one digest serves both checks: constant-time against the admin token's digest, then the key lookup
  const hash = sha256(creds.token);
  if (timingSafeEqual(hash, adminTokenDigest()) && (creds.scheme === 'bearer' || creds.username === 'admin')) {
    return ADMIN;
  }
  const digest = hash.toString('hex');
  const cached = peekKey(digest);
  if (cached) return keyPrincipal(creds, cached);
  return cachedKey(digest, async () => {
    const [row] = await preparedQuery<KeyRow>('auth-key', KEY_SQL, [hash]);
    if (!row) return undefined;
    // the hub came with it: remember it too, so that requireHub needs no query of its own
    await cachedHub(row.hub_id, async () => hubInfo(row.hub_id, row.hub_name, row.hub_features));
    return { id: row.id, hubId: row.hub_id, username: row.username };
  }).then((key) => keyPrincipal(creds, key));
}

const ADMIN: Principal = Object.freeze({ kind: 'admin', name: 'admin' });

function keyPrincipal(creds: Credentials, key: CachedKey | undefined): Principal {
  if (!key) throw unauthorized('bearer token missing or invalid');
  if (creds.scheme === 'basic' && !safeEqual(creds.username, key.username)) throw unauthorized('bearer token missing or invalid');
  return { kind: 'apikey', keyId: key.id, hubId: key.hubId, name: key.username };
}

/**
 * Operator routes: the admin token only (Bearer, or Basic with user `admin`). A hub's API key is authenticated but
 * not allowed here: 403 `forbidden`.
 */
export const requireAdmin: Middleware = async (ctx, next) => {
  const principal = await authenticate(ctx.get('authorization'));
  if (principal.kind !== 'admin') throw refusal('EH_ADMIN_REQUIRED', 'the operator API needs the admin token');
  ctx.state.principal = principal;
  await next();
};

/**
 * Hub routes: authenticates, then admits the caller to `:hubId` only when the key belongs to that hub (or it is the
 * operator) and the hub exists. The hub is then `ctx.state.hub`; every query scopes by it through api/scope.ts.
 */
export const requireHub: Middleware = (ctx, next) => {
  const principal = authenticate(ctx.get('authorization'));
  const hubId = ctx.params.hubId as string;
  // key and hub cached (the common case): no promise of its own; a synchronous throw reaches the errors middleware
  // as a rejection (koa-compose)
  if (!(principal instanceof Promise)) {
    if (!mayEnter(principal, hubId)) throw notAuthorized();
    const hub = peekHub(hubId);
    if (hub) return admitted(ctx, principal, hub, next);
  }
  return requireHubLoading(ctx, next, principal, hubId);
};

async function requireHubLoading(ctx: Context, next: Next, pending: Principal | Promise<Principal>, hubId: string): Promise<void> {
  const principal = await pending;
  if (!mayEnter(principal, hubId)) throw notAuthorized();
  const hub = await findHubInfo(hubId);
  if (!hub) throw notAuthorized();
  await admitted(ctx, principal, hub, next);
}

/** The operator enters every hub; a hub's API key only its own. */
const mayEnter = (principal: Principal, hubId: string) => principal.kind !== 'apikey' || principal.hubId === hubId;

function admitted(ctx: Context, principal: Principal, hub: CachedHub, next: Next): Promise<unknown> {
  ctx.state.principal = principal;
  ctx.state.hub = hub;
  return next();
}

/** Account routes without a hub in the path (e.g. `/account/frontends`): the API key's own hub. */
export const requireAccount: Middleware = async (ctx, next) => {
  const principal = await authenticate(ctx.get('authorization'));
  if (principal.kind !== 'apikey') throw refusal('EH_HUB_KEY_REQUIRED', 'account routes need a hub API key; operators use /hub/{hubId}/...');
  const hub = await findHubInfo(principal.hubId);
  if (!hub) throw notAuthorized();
  ctx.state.principal = principal;
  ctx.state.hub = hub;
  await next();
};

export const principalName = (ctx: Context): string => (ctx.state.principal as Principal).name;
