import test from 'ava';
import pg from 'pg';
import { type HubFixture, useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false });

const oidc = (name = 'corp-sso') => ({
  name,
  type: 'OIDC',
  config: { clientId: 'client-1', clientSecret: 's3cr3t-value', issuerUrl: 'https://id.example.com/realms/corp', scopes: ['openid', 'email', 'profile'] },
  emailPatterns: ['*@example.com'],
});

async function create(hub: HubFixture, body: unknown) {
  return hub.call('POST', `${hub.h}/auth-providers`, { body });
}

test('create, get, list, patch and delete an OIDC provider; the client secret is never returned', async (t) => {
  const hub = await stack.hub();
  const created = await create(hub, oidc());
  t.is(created.status, 201, created.text);
  t.like(created.json, {
    hubId: hub.hubId,
    name: 'corp-sso',
    type: 'OIDC',
    config: { clientId: 'client-1', issuerUrl: 'https://id.example.com/realms/corp', scopes: ['openid', 'email', 'profile'] },
    emailPatterns: ['*@example.com'],
  });
  t.false('clientSecret' in created.json.config);
  t.false(created.text.includes('s3cr3t-value'));

  for (const prefix of [hub.h, hub.h2]) {
    const got = await hub.call('GET', `${prefix}/auth-providers/${created.json.id}`);
    t.is(got.status, 200);
    t.deepEqual(got.json, created.json);
  }
  const list = await hub.call('GET', `${hub.h}/auth-providers`);
  t.is(list.status, 200);
  t.is(list.json.totalElements, 1);
  t.false(list.text.includes('s3cr3t-value'));

  const patched = await hub.call('PATCH', `${hub.h}/auth-providers/${created.json.id}`, {
    body: { emailPatterns: ['*@example.org', 'alice@example.net'], config: { clientSecret: 'rotated-secret' } },
  });
  t.is(patched.status, 200, patched.text);
  t.deepEqual(patched.json.emailPatterns, ['*@example.org', 'alice@example.net']);
  t.is(patched.json.config.clientId, 'client-1');
  t.false(patched.text.includes('rotated-secret'));

  const removed = await hub.call('DELETE', `${hub.h}/auth-providers/${created.json.id}`);
  t.is(removed.status, 204);
  t.is((await hub.call('GET', `${hub.h}/auth-providers/${created.json.id}`)).status, 404);
});

test('the client secret is stored encrypted', async (t) => {
  const hub = await stack.hub();
  const created = await create(hub, { ...oidc('sealed'), config: { ...oidc().config, clientSecret: 'plain-text-marker-42' } });
  t.is(created.status, 201);
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT * FROM auth_providers WHERE id = $1', [created.json.id]);
    t.is(rows.length, 1);
    t.false(JSON.stringify(rows[0]).includes('plain-text-marker-42'));
    t.regex(rows[0].client_secret_sealed, /^v1\./);
  } finally {
    await client.end();
  }
});

test('GOOGLE and GITHUB need no issuer; OIDC needs one and the openid scope', async (t) => {
  const hub = await stack.hub();
  for (const type of ['GOOGLE', 'GITHUB']) {
    const r = await create(hub, { name: type.toLowerCase(), type, config: { clientId: 'c', clientSecret: 's' } });
    t.is(r.status, 201, r.text);
    t.false('issuerUrl' in r.json.config);
  }
  const noIssuer = await create(hub, { name: 'x', type: 'OIDC', config: { clientId: 'c', clientSecret: 's' } });
  assertRefused(t, noIssuer, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.config.issuerUrl');
  const defaults = await create(hub, { name: 'defaults', type: 'OIDC', config: { clientId: 'c', clientSecret: 's', issuerUrl: 'https://id.example.com' } });
  t.is(defaults.status, 201);
  t.deepEqual(defaults.json.config.scopes, ['openid', 'email', 'profile']);
  const noOpenid = await create(hub, { ...oidc('y'), config: { ...oidc().config, scopes: ['email'] } });
  assertRefused(t, noOpenid, 400, 'invalid_request', 'EH_INVALID_REQUEST', ['$.config.scopes', "'openid'"]);
  const githubIssuer = await create(hub, { name: 'z', type: 'GITHUB', config: { clientId: 'c', clientSecret: 's', issuerUrl: 'https://github.com' } });
  assertRefused(t, githubIssuer, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.config.issuerUrl');
});

test('malformed input is a 400 naming the property; a duplicate name is 409', async (t) => {
  const hub = await stack.hub();
  const cases: [string, unknown, string][] = [
    ['bad type', { ...oidc(), type: 'SAML' }, '$.type'],
    ['no secret', { ...oidc(), config: { clientId: 'c', issuerUrl: 'https://x.example.com' } }, '$.config.clientSecret'],
    ['bad email pattern', { ...oidc(), emailPatterns: ['*example.com'] }, '$.emailPatterns[0]'],
    ['wildcard inside the domain', { ...oidc(), emailPatterns: ['*@*.example.com'] }, '$.emailPatterns[0]'],
    ['issuer not a URL', { ...oidc(), config: { ...oidc().config, issuerUrl: 'id.example.com' } }, '$.config.issuerUrl'],
    ['unknown config key', { ...oidc(), config: { ...oidc().config, clientSecert: 'x' } }, '$.config.clientSecert'],
    ['name wrong type', { ...oidc(), name: 7 }, '$.name'],
  ];
  for (const [, body, names] of cases) assertRefused(t, await create(hub, body), 400, 'invalid_request', 'EH_INVALID_REQUEST', names);
  t.is((await hub.call('GET', `${hub.h}/auth-providers`)).json.totalElements, 0, 'nothing half-written');
  t.is((await create(hub, oidc('dup'))).status, 201);
  const dup = await create(hub, oidc('dup'));
  assertRefused(t, dup, 409, 'conflict', 'EH_CONFLICT');
  const github = await hub.call('PATCH', `${hub.h}/auth-providers/${(await create(hub, oidc('p'))).json.id}`, { body: { type: 'GITHUB' } });
  t.is(github.status, 200, 'switching to GITHUB drops the OIDC issuer');
  t.false('issuerUrl' in github.json.config);
  const back = await hub.call('PATCH', `${hub.h}/auth-providers/${github.json.id}`, { body: { type: 'OIDC' } });
  assertRefused(t, back, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.config.issuerUrl'); // OIDC again needs an issuer
});

test('hub isolation: another hub cannot see, change or delete a provider', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const created = await create(a, oidc());
  const id = created.json.id;
  for (const [method, body] of [['GET'], ['PATCH', { name: 'stolen' }], ['DELETE']] as const) {
    const other = await b.call(method, `${b.h}/auth-providers/${id}`, { body });
    t.is(other.status, 404, `${method} in another hub`);
    t.is(other.json.error, 'not_found');
    const foreignPath = await b.call(method, `${a.h}/auth-providers/${id}`, { body });
    t.is(foreignPath.status, 403, `${method} on another hub's path`);
  }
  t.is((await b.call('GET', `${b.h}/auth-providers`)).json.totalElements, 0);
  t.is((await a.call('GET', `${a.h}/auth-providers/${id}`)).json.name, 'corp-sso');
});
