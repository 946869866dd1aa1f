import test from 'ava';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { QueryTypes } from 'sequelize';
import { db } from '../../../shared/db.js';
import { sha256 } from '../../../shared/secrets.js';
import { useStack, type HubFixture } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);

const tokens = (hub: HubFixture, prefix: 'h' | 'h2' = 'h') => `${hub[prefix]}/certificate-request-tokens`;

async function createToken(hub: HubFixture, body: Record<string, unknown>) {
  const r = await hub.call('POST', tokens(hub), { body });
  if (r.status !== 201) throw new Error(`create token: ${r.status} ${r.text}`);
  return r.json;
}

test('create answers 201 with the token; get, by-token and token/ forms find it under both prefixes', async (t) => {
  const hub = await stack.hub();
  const before = Date.now();
  const r = await hub.call('POST', tokens(hub), { body: { name: 'device-1', commonName: 'device-1.example.com', organization: 'Acme' } });
  t.is(r.status, 201);
  const tok = r.json;
  t.like(tok, { name: 'device-1', hubId: hub.hubId, commonName: 'device-1.example.com', organization: 'Acme', organizationalUnit: null, validYears: 1 });
  t.regex(tok.token, /^[A-Za-z0-9_-]{32,}$/, 'URL-safe, >= 192 bits');
  t.is(typeof tok.createdBy, 'string');
  const ttl = new Date(tok.expiresAt).getTime() - before;
  t.true(ttl > 6.9 * 86400_000 && ttl < 7.1 * 86400_000, 'default expiry P7D');
  for (const path of [
    `${tokens(hub)}/${tok.id}`,
    `${tokens(hub, 'h2')}/${tok.id}`,
    `${tokens(hub)}/by-token/${tok.token}`,
    `${tokens(hub, 'h2')}/token/${tok.token}`,
  ]) {
    const g = await hub.call('GET', path);
    t.is(g.status, 200, path);
    t.deepEqual(g.json, tok, path);
  }
  const missing = await hub.call('GET', `${tokens(hub)}/by-token/nope`);
  t.is(missing.status, 404);
  t.is(missing.json.error, 'not_found');
  // lookups go by the token's SHA-256, which the database keeps beside it
  const [row] = await db().query<{ token_digest: Buffer }>('SELECT token_digest FROM certificate_request_tokens WHERE id = $1', {
    bind: [tok.id],
    type: QueryTypes.SELECT,
  });
  t.deepEqual(row.token_digest, sha256(tok.token));
});

test('expiresAt, ttl and validYears are honoured and validated', async (t) => {
  const hub = await stack.hub();
  const at = new Date(Date.now() + 3600_000).toISOString();
  t.is((await createToken(hub, { name: 'a', expiresAt: at, validYears: 3 })).expiresAt, at);
  const b = await createToken(hub, { name: 'b', ttl: 'PT2H' });
  t.true(Math.abs(new Date(b.expiresAt).getTime() - Date.now() - 2 * 3600_000) < 60_000);
  // each refusal names the property it is about
  const bad: [Record<string, unknown>, string[]][] = [
    [{ name: 'c', expiresAt: new Date(Date.now() - 1000).toISOString() }, ['$.expiresAt']],
    [{ name: 'c', expiresAt: 'tomorrow' }, ['$.expiresAt']],
    [{ name: 'c', ttl: '7 days' }, ['$.ttl']],
    [{ name: 'c', ttl: 'P7D', expiresAt: at }, ["'expiresAt'", "'ttl'"]],
    [{ name: 'c', validYears: 11 }, ['$.validYears']],
    [{ name: 'c', validYears: 1.5 }, ['$.validYears']],
    [{ name: 'c', token: 'mine' }, ['$.token']],
    [{}, ['$.name']],
    [{ name: 42 }, ['$.name']],
  ];
  for (const [body, names] of bad) assertRefused(t, await hub.call('POST', tokens(hub), { body }), 400, 'invalid_request', 'EH_INVALID_REQUEST', names);
  const list = await hub.call('GET', tokens(hub));
  t.is(list.json.totalElements, 2, 'refusals wrote nothing');
});

test('list is paged and sortable', async (t) => {
  const hub = await stack.hub();
  for (const name of ['c', 'a', 'e', 'b', 'd']) await createToken(hub, { name });
  const page = await hub.call('GET', `${tokens(hub)}?page=1&size=2&sort=name,asc`);
  t.is(page.status, 200);
  t.deepEqual(
    page.json.content.map((x: { name: string }) => x.name),
    ['c', 'd'],
  );
  t.deepEqual(page.json.pageable, { pageNumber: 1, pageSize: 2 });
  t.is(page.json.totalElements, 5);
  t.is(page.json.totalPages, 3);
  const desc = await hub.call('GET', `${tokens(hub, 'h2')}?sort=name,desc`);
  t.deepEqual(
    desc.json.content.map((x: { name: string }) => x.name),
    ['e', 'd', 'c', 'b', 'a'],
  );
  const bad = await hub.call('GET', `${tokens(hub)}?sort=token`);
  t.is(bad.status, 400);
});

test('PATCH changes given fields, PUT replaces them; the token string never changes', async (t) => {
  const hub = await stack.hub();
  const tok = await createToken(hub, { name: 'p', commonName: 'cn', organization: 'o', organizationalUnit: 'ou' });
  const patched = await hub.call('PATCH', `${tokens(hub)}/${tok.id}`, { body: { organization: 'Acme', validYears: 2 } });
  t.is(patched.status, 200);
  t.like(patched.json, { name: 'p', commonName: 'cn', organization: 'Acme', organizationalUnit: 'ou', validYears: 2, token: tok.token });
  const put = await hub.call('PUT', `${tokens(hub)}/${tok.id}`, { body: { name: 'q', commonName: 'cn2' } });
  t.is(put.status, 200);
  t.like(put.json, { name: 'q', commonName: 'cn2', organization: null, organizationalUnit: null, token: tok.token });
  const change = await hub.call('PATCH', `${tokens(hub)}/${tok.id}`, { body: { token: 'new' } });
  assertRefused(t, change, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.token');
  const putWithoutName = await hub.call('PUT', `${tokens(hub)}/${tok.id}`, { body: { commonName: 'x' } });
  assertRefused(t, putWithoutName, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.name');
  t.is((await hub.call('GET', `${tokens(hub)}/${tok.id}`)).json.token, tok.token);
});

test('names are unique in the hub among tokens (also on rename and under concurrent creates)', async (t) => {
  const hub = await stack.hub();
  const other = await stack.hub();
  const a = await createToken(hub, { name: 'dup' });
  const again = await hub.call('POST', tokens(hub), { body: { name: 'dup' } });
  assertRefused(t, again, 409, 'conflict', 'EH_NAME_TAKEN', "'dup'");
  t.is((await other.call('POST', tokens(other), { body: { name: 'dup' } })).status, 201, 'another hub may use the name');
  const b = await createToken(hub, { name: 'other' });
  const rename = await hub.call('PATCH', `${tokens(hub)}/${b.id}`, { body: { name: 'dup' } });
  assertRefused(t, rename, 409, 'conflict', 'EH_NAME_TAKEN');
  t.is((await hub.call('GET', `${tokens(hub)}/${b.id}`)).json.name, 'other');
  // the old name is free after a rename, and after a delete
  t.is((await hub.call('PATCH', `${tokens(hub)}/${a.id}`, { body: { name: 'renamed' } })).status, 200);
  t.is((await hub.call('POST', tokens(hub), { body: { name: 'dup' } })).status, 201);
  const racers = await Promise.all(Array.from({ length: 10 }, () => hub.call('POST', tokens(hub), { body: { name: 'race' } })));
  t.deepEqual(racers.map((r) => r.status).sort(), [201, ...Array(9).fill(409)]);
});

test('DELETE answers the delete record; the token is gone', async (t) => {
  const hub = await stack.hub();
  const tok = await createToken(hub, { name: 'gone' });
  const d = await hub.call('DELETE', `${tokens(hub, 'h2')}/${tok.id}`);
  t.is(d.status, 200);
  t.deepEqual(Object.keys(d.json).sort(), ['deletedAt', 'deletedBy', 'hubId', 'id', 'name']);
  t.like(d.json, { id: tok.id, name: 'gone', hubId: hub.hubId });
  t.is((await hub.call('GET', `${tokens(hub)}/${tok.id}`)).status, 404);
  t.is((await hub.call('DELETE', `${tokens(hub)}/${tok.id}`)).status, 404);
  t.is((await hub.call('POST', tokens(hub), { body: { name: 'gone' } })).status, 201, 'name freed');
});

test('hub isolation: another hub key is 403, another hub token id is 404', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const tok = await createToken(a, { name: 'mine' });
  for (const [method, path] of [
    ['GET', tokens(a)],
    ['GET', `${tokens(a)}/${tok.id}`],
    ['GET', `${tokens(a, 'h2')}/${tok.id}/enrollment-jwt`],
    ['DELETE', `${tokens(a)}/${tok.id}`],
  ]) {
    const r = await b.call(method, path);
    t.is(r.status, 403, `${method} ${path}`);
    t.is(r.json.error, 'not_found');
  }
  for (const [method, path] of [
    ['GET', `${tokens(b)}/${tok.id}`],
    ['GET', `${tokens(b)}/by-token/${tok.token}`],
    ['PATCH', `${tokens(b)}/${tok.id}`],
    ['DELETE', `${tokens(b)}/${tok.id}`],
    ['GET', `${tokens(b, 'h2')}/${tok.id}/enrollment-jwt`],
  ]) {
    const r = await b.call(method, path, method === 'PATCH' ? { body: { name: 'x' } } : {});
    t.is(r.status, 404, `${method} ${path}`);
  }
  t.is((await a.call('GET', `${tokens(a)}/${tok.id}`)).json.name, 'mine');
  const noAuth = await stack.call('GET', tokens(a));
  t.is(noAuth.status, 401);
});

test('enrollment JWT: ES256 with kid and no jku, the documented claims, verifiable against the JWKS', async (t) => {
  const hub = await stack.hub();
  const tok = await createToken(hub, { name: 'jwt-dev', commonName: 'dev.example.com', organizationalUnit: 'Edge', validYears: 2 });
  const r = await hub.call('GET', `${tokens(hub, 'h2')}/${tok.id}/enrollment-jwt`);
  t.is(r.status, 200);
  const url = `${stack.baseUrl}/hub/v2/${hub.hubId}/client-certificates/enroll`;
  t.deepEqual(Object.keys(r.json).sort(), ['certificateRequestTokenId', 'expiresAt', 'hubId', 'jwt', 'url']);
  t.like(r.json, { hubId: hub.hubId, certificateRequestTokenId: tok.id, url, expiresAt: tok.expiresAt });
  const header = decodeProtectedHeader(r.json.jwt);
  t.is(header.alg, 'ES256');
  t.is(typeof header.kid, 'string');
  t.false('jku' in header);

  const jwks = await stack.call('GET', '/hub/v2/public/.well-known/jwks.json');
  t.is(jwks.status, 200);
  t.regex(jwks.headers.get('cache-control') ?? '', /max-age=\d+/);
  for (const key of jwks.json.keys) {
    t.like(key, { kty: 'EC', crv: 'P-256', use: 'sig', alg: 'ES256' });
    t.false('d' in key, 'no private member');
  }
  t.true(jwks.json.keys.some((k: { kid: string }) => k.kid === header.kid));
  const { payload } = await jwtVerify(r.json.jwt, createLocalJWKSet(jwks.json), { issuer: 'hub', audience: hub.hubId });
  t.is(payload.sub, tok.token);
  t.is(payload.exp, Math.floor(new Date(tok.expiresAt).getTime() / 1000));
  t.is(typeof payload.iat, 'number');
  t.like(payload, { url, name: 'jwt-dev', validYears: 2, cn: 'dev.example.com', ou: 'Edge' });
  t.false('o' in payload, 'claims only for the subject fields the token sets');
});

test('enrollment JWT is refused for an expired token and 404 for an unknown one', async (t) => {
  const hub = await stack.hub();
  const tok = await createToken(hub, { name: 'short', ttl: 'PT1S' });
  await new Promise((r) => setTimeout(r, 1100));
  const r = await hub.call('GET', `${tokens(hub, 'h2')}/${tok.id}/enrollment-jwt`);
  // a state-machine refusal that names the state
  assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_STATE', 'expired');
  t.is((await hub.call('GET', `${tokens(hub, 'h2')}/00000000-0000-0000-0000-000000000000/enrollment-jwt`)).status, 404);
});
