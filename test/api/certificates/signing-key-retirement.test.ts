/**
 * Bounded token lifetime and key retirement: a maximum token TTL (so a retired key leaves the JWKS in bounded time),
 * verification keys that left the database stop verifying within seconds in every process, an unknown kid is
 * remembered briefly, the JWKS is cached and dropped on rotation, and an operator can revoke a key at once.
 */
import { generateKeyPairSync } from 'node:crypto';
import test from 'ava';
import { decodeProtectedHeader, SignJWT } from 'jose';
import pg from 'pg';
import { db } from '../../../shared/db.js';
import { makeCsr } from '../../helpers/pki.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { env: { HUB_SIGNING_KEY_CACHE_MS: '1500' } });
stack.onStop(async () => {
  await sql?.end();
});
let hub: HubFixture;
let sql: pg.Client;
test.before(async () => {
  hub = await stack.hub();
  sql = new pg.Client({ connectionString: stack.databaseUrl });
  await sql.connect();
});

let n = 0;
async function tokenWithJwt(body: Record<string, unknown> = {}) {
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: `k-${++n}`, ...body } });
  if (tok.status !== 201) throw new Error(`${tok.status} ${tok.text}`);
  const r = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  return { token: tok.json, jwt: r.json.jwt as string, kid: decodeProtectedHeader(r.json.jwt).kid as string };
}
const validate = async (jwt: string, csr: string) =>
  (await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt, csr }, headers: { 'x-validate': 'true' } })).json as { label: string }[];
const kids = async () => ((await stack.call('GET', '/hub/v2/public/.well-known/jwks.json')).json.keys as { kid: string }[]).map((k) => k.kid);

/** Counts the statements sent to PostgreSQL that match `pattern` while `fn` runs. */
async function countQueries(pattern: RegExp, fn: () => Promise<void>): Promise<number> {
  let count = 0;
  const hook = (_options: unknown, query: { sql?: string }) => {
    if (pattern.test(query?.sql ?? '')) count++;
  };
  db().addHook('beforeQuery', 'count', hook as never);
  try {
    await fn();
  } finally {
    db().removeHook('beforeQuery', 'count');
  }
  return count;
}

test.serial('a token lifetime beyond HUB_TOKEN_MAX_TTL (default P90D) is refused with 400 naming the limit', async (t) => {
  for (const body of [{ ttl: 'P91D' }, { ttl: 'P1Y' }, { expiresAt: new Date(Date.now() + 100 * 86400_000).toISOString() }]) {
    const r = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'too-long', ...body } });
    // the message names the limit and its setting
    assertRefused(t, r, 400, 'invalid_request', 'EH_TOKEN_TTL_TOO_LONG', 'maximum token lifetime P90D (HUB_TOKEN_MAX_TTL)');
  }
  const ok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'long', ttl: 'P90D' } });
  t.is(ok.status, 201);
  const patch = await hub.call('PATCH', `${hub.h}/certificate-request-tokens/${ok.json.id}`, { body: { ttl: 'P2Y' } });
  assertRefused(t, patch, 400, 'invalid_request', 'EH_TOKEN_TTL_TOO_LONG');
  t.is((await hub.call('GET', `${hub.h}/certificate-request-tokens/${ok.json.id}`)).json.expiresAt, ok.json.expiresAt, 'nothing changed');
});

test.serial('a key that left the database stops verifying within seconds, though this process had it cached', async (t) => {
  const { jwt, kid } = await tokenWithJwt();
  const csr = await makeCsr('/CN=cached');
  t.deepEqual(await validate(jwt, csr), [], 'verifies (and is now cached)');
  // another process revokes it: straight in the database, so this process learns nothing but what it reads
  await sql.query(`UPDATE signing_keys SET status = 'REVOKED', revoked_at = now(), retired_at = now() WHERE kid = $1`, [kid]);
  await sql.query(
    `INSERT INTO signing_keys (kid, status, public_jwk, private_key_sealed) SELECT 'x' || kid, 'ACTIVE', jsonb_set(public_jwk, '{kid}', to_jsonb('x' || kid)), private_key_sealed FROM signing_keys WHERE kid = $1`,
    [kid],
  );
  await waitFor(async () => (await validate(jwt, csr)).some((v) => v.label === 'unknown_key'), { timeoutMs: 15_000, what: 'the cached key to be dropped' });
  await waitFor(async () => !(await kids()).includes(kid), { timeoutMs: 15_000, what: 'the JWKS to drop the key' });
  t.pass();
});

test.serial('an unknown kid costs one query per cache period, not one per request; the JWKS is cached too', async (t) => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const forged = await new SignJWT({ url: 'x' })
    .setProtectedHeader({ alg: 'ES256', kid: 'ghost-kid', typ: 'JWT' })
    .setIssuer('hub')
    .setAudience(hub.hubId)
    .setSubject('nothing')
    .setExpirationTime('1h')
    .sign(privateKey);
  const lookups = await countQueries(/FROM signing_keys WHERE kid/, async () => {
    for (let i = 0; i < 20; i++) {
      const r = await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt: forged, csr: 'x' } });
      if (r.status !== 403) throw new Error(`${r.status} ${r.text}`);
    }
  });
  t.true(lookups <= 3, `${lookups} key look-ups for 20 requests`);
  const reads = await countQueries(/FROM signing_keys/, async () => {
    for (let i = 0; i < 20; i++) await kids();
  });
  t.true(reads <= 6, `${reads} signing key queries for 20 JWKS reads`);
});

test.serial('rotation shows in the JWKS at once, despite its cache', async (t) => {
  await kids();
  const r = await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin });
  t.is(r.status, 200);
  t.true((await kids()).includes(r.json.kid));
});

test.serial('an operator revokes a key at once: it leaves the JWKS and its JWTs stop working; the token gets a new JWT', async (t) => {
  const { token, jwt, kid } = await tokenWithJwt({ commonName: 'revoked-1' });
  const csr = await makeCsr('/CN=revoked-1');
  t.true((await kids()).includes(kid));
  t.is((await stack.call('POST', `/admin/v1/signing-keys/${kid}:revoke`)).status, 401);
  t.is((await stack.call('POST', `/admin/v1/signing-keys/${kid}:revoke`, { auth: hub.bearer })).status, 403);
  const r = await stack.call('POST', `/admin/v1/signing-keys/${kid}:revoke`, { auth: stack.admin });
  t.is(r.status, 200, r.text);
  t.like(r.json, { kid, status: 'REVOKED' });
  t.truthy(r.json.revokedAt);
  t.not(r.json.activeKid, kid, 'revoking the active key activates a new one');
  t.false((await kids()).includes(kid), 'out of the JWKS at once');
  t.true((await kids()).includes(r.json.activeKid));
  const refused = await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt, csr } });
  assertRefused(t, refused, 403, 'not_found', 'EH_JWT_UNKNOWN_KEY');
  const again = await stack.call('POST', `/admin/v1/signing-keys/${kid}:revoke`, { auth: stack.admin });
  assertRefused(t, again, 400, 'invalid_request', 'EH_INVALID_STATE', 'REVOKED'); // names the state
  t.is((await stack.call('POST', '/admin/v1/signing-keys/no-such-kid:revoke', { auth: stack.admin })).status, 404);

  const fresh = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${token.id}/enrollment-jwt`);
  t.is(decodeProtectedHeader(fresh.json.jwt).kid, r.json.activeKid);
  t.is((await stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body: { jwt: fresh.json.jwt, csr } })).status, 201);
  const { rows } = await sql.query('SELECT status, revoked_at FROM signing_keys WHERE kid = $1', [kid]);
  t.is(rows[0].status, 'REVOKED', 'the row stays as a record');
});
