/**
 * ES256 JWTs checked with node:crypto alone: the compact form decoded, the signature verified by `kid` against the
 * service's published key set (fetched from the url's origin; read again once when the kid is unknown), then `iss`,
 * `aud` and `exp`.
 */
import { createPublicKey, verify } from 'node:crypto';
import { EnrollError, oneLine } from './errors.js';

const JWT_ISSUER = 'hub';
const JWKS_PATH = '/hub/v2/public/.well-known/jwks.json';
const HTTP_TIMEOUT_MS = 30_000;
/** Clock skew tolerated on exp. */
const LEEWAY_S = 30;

/** @typedef {Record<string, unknown> & { iss?: unknown; aud?: unknown; sub?: unknown; exp?: unknown; url?: unknown }} Claims */

/** @param {string} part */
const json = (part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));

/**
 * The header and claims as written, before any verification: only to learn where to verify them.
 * @param {string} jwt
 * @returns {{ kid: string; claims: Claims }}
 */
export function unverifiedClaims(jwt) {
  const parts = jwt.split('.');
  /** @type {Record<string, unknown>} */
  let header;
  /** @type {Claims} */
  let claims;
  try {
    if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) throw new Error('not compact');
    header = json(parts[0]);
    claims = json(parts[1]);
    if (!header || typeof header !== 'object' || !claims || typeof claims !== 'object') throw new Error('not objects');
  } catch {
    throw new EnrollError('the argument is not a compact JWT (three base64url parts separated by dots)');
  }
  if (header.alg !== 'ES256') throw new EnrollError(`refused: the JWT must be signed with ES256 (it says ${String(header.alg)})`);
  if (typeof header.kid !== 'string' || !header.kid) throw new EnrollError('refused: the JWT header names no signing key (kid)');
  if (header.jku !== undefined || header.jwk !== undefined || header.x5u !== undefined)
    throw new EnrollError('refused: the JWT header must not name its own key (jku, jwk or x5u)');
  return { kid: header.kid, claims };
}

/**
 * @param {URL} jwksUrl
 * @returns {Promise<Array<Record<string, unknown>>>}
 */
async function keySet(jwksUrl) {
  let res;
  try {
    res = await fetch(jwksUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  } catch (err) {
    throw new EnrollError(`could not read the key set at ${jwksUrl.href}: ${oneLine(err)}`);
  }
  const body = /** @type {{ keys?: unknown } | null | undefined} */ (await res.json().catch(() => undefined));
  if (!res.ok || !body || !Array.isArray(body.keys))
    throw new EnrollError(`could not verify the JWT against ${jwksUrl.href}: the key set answered ${res.status} without keys`);
  return body.keys;
}

/**
 * Signature by kid against the key set at the url's origin, then iss, aud (the hub of the url), exp and sub.
 * @param {string} jwt
 * @param {URL} url
 * @param {string} hubId
 * @returns {Promise<Claims>}
 */
export async function verifiedClaims(jwt, url, hubId) {
  const { kid, claims } = unverifiedClaims(jwt);
  const jwksUrl = new URL(JWKS_PATH, url.origin);
  let jwk = (await keySet(jwksUrl)).find((k) => k.kid === kid);
  // a key rotated in a moment ago: read the set once more
  if (!jwk) jwk = (await keySet(jwksUrl)).find((k) => k.kid === kid);
  if (!jwk) throw new EnrollError(`refused: the JWT's signing key (kid) is not in the key set at ${jwksUrl.href}`);
  const [h, p, s] = jwt.split('.');
  let ok = false;
  try {
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') throw new Error('not a P-256 key');
    const key = createPublicKey({ key: /** @type {import('node:crypto').JsonWebKey} */ ({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }), format: 'jwk' });
    ok = verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
  } catch (err) {
    throw new EnrollError(`could not verify the JWT against ${jwksUrl.href}: ${oneLine(err)}`);
  }
  if (!ok) throw new EnrollError(`refused: the JWT's signature does not verify against the key set at ${jwksUrl.href}`);
  if (claims.iss !== JWT_ISSUER) throw new EnrollError(`refused: the JWT's issuer (iss) is '${String(claims.iss)}', expected '${JWT_ISSUER}'`);
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(hubId))
    throw new EnrollError(`refused: the JWT's audience (aud) is '${String(claims.aud)}', expected the hub of its url, '${hubId}'`);
  if (typeof claims.exp !== 'number' || !Number.isFinite(claims.exp))
    throw new EnrollError("refused: the JWT's 'exp' claim is invalid (missing or not a number)");
  if (claims.exp + LEEWAY_S <= Date.now() / 1000) throw new EnrollError(`refused: the JWT expired at ${new Date(claims.exp * 1000).toISOString()}`);
  if (typeof claims.sub !== 'string' || !claims.sub) throw new EnrollError("refused: the JWT's 'sub' claim is invalid (missing)");
  return claims;
}
