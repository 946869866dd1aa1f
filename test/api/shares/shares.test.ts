import test from 'ava';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);
let publicFrontendId: string;
test.before(async () => {
  const hub = await stack.hub();
  const frontends = await hub.call('GET', `${hub.h}/frontends`);
  publicFrontendId = frontends.json.find((f: { publicName: string }) => f.publicName === 'public').id;
});

const share = (overrides: Record<string, unknown> = {}) => ({ name: 'web', frontendIds: [publicFrontendId], target: 'http://10.0.0.5:8080/app', ...overrides });
const createShare = (hub: HubFixture, body: unknown) => hub.call('POST', `${hub.h}/shares`, { body });

test('frontends: the seeded public frontend and operator-created ones are listed in both forms', async (t) => {
  const hub = await stack.hub();
  const added = await stack.call('POST', '/admin/v1/frontends', {
    auth: stack.admin,
    body: { publicName: 'eu', urlTemplate: 'https://{token}.eu.example.com' },
  });
  t.is(added.status, 201);
  for (const [path, auth] of [
    [`${hub.h}/frontends`, hub.bearer],
    [`${hub.h2}/frontends`, hub.bearer],
    ['/account/frontends', hub.bearer],
    ['/account/frontends', hub.basic],
  ]) {
    const r = await stack.call('GET', path, { auth });
    t.is(r.status, 200, path);
    t.true(Array.isArray(r.json));
    const names = r.json.map((f: { publicName: string }) => f.publicName);
    t.true(names.includes('public') && names.includes('eu'), path);
    for (const f of r.json) {
      t.deepEqual(Object.keys(f).sort(), ['id', 'publicName', 'urlTemplate']);
      t.true(f.urlTemplate.includes('{token}'));
    }
  }
});

test('create a share: every documented field, PROVISIONING then ACTIVE through a job', async (t) => {
  const hub = await stack.hub();
  const env = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'laptop' } });
  const created = await createShare(hub, share({ envZId: env.json.envZId }));
  t.is(created.status, 201, created.text);
  const s = created.json;
  t.regex(s.zId, /^[a-z0-9]{12}$/);
  t.like(s, {
    hubId: hub.hubId,
    name: 'web',
    status: 'PROVISIONING',
    authProviderId: null,
    frontendId: publicFrontendId,
    shareMode: 'public',
    backendMode: 'proxy',
    envZId: env.json.envZId,
    frontendSelection: 'public',
    frontendEndpoint: `http://${s.zId}.share.localhost:8000`,
    backendProxyEndpoint: 'http://10.0.0.5:8080/app',
    oauthProvider: null,
    oauthEmailDomains: null,
    oauthAuthorizationCheckInterval: null,
    reserved: false,
    limited: false,
  });
  const active = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${s.zId}`);
      return r.json.status === 'ACTIVE' && r.json;
    },
    { what: 'share ACTIVE' },
  );
  t.is(active.frontendEndpoint, s.frontendEndpoint);
  const executions = await hub.call('GET', `${hub.h}/executions?resourceId=${s.zId}`);
  t.is(executions.json.totalElements, 1);
  t.like(executions.json.content[0], { type: 'shares.provisionShare', resourceType: 'share', status: 'SUCCEEDED' });
});

test('list is paged, get answers under both prefixes, delete answers 204 and the share is gone', async (t) => {
  const hub = await stack.hub();
  const zIds: string[] = [];
  for (const name of ['a', 'b', 'c']) zIds.push((await createShare(hub, share({ name }))).json.zId);
  const page = await hub.call('GET', `${hub.h}/shares?page=0&size=2&sort=name,asc`);
  t.is(page.status, 200);
  t.deepEqual(page.json.pageable, { pageNumber: 0, pageSize: 2 });
  t.is(page.json.totalElements, 3);
  t.is(page.json.totalPages, 2);
  t.deepEqual(
    page.json.content.map((s: { name: string }) => s.name),
    ['a', 'b'],
  );
  t.is(page.json.content[0].backendProxyEndpoint, 'http://10.0.0.5:8080/app');
  t.is((await hub.call('GET', `${hub.h2}/shares/${zIds[2]}`)).json.name, 'c');
  const removed = await hub.call('DELETE', `${hub.h}/shares/${zIds[0]}`);
  t.is(removed.status, 204);
  t.is(removed.text, '');
  const gone = await hub.call('GET', `${hub.h}/shares/${zIds[0]}`);
  assertRefused(t, gone, 404, 'not_found', 'EH_NOT_FOUND');
  t.is((await hub.call('DELETE', `${hub.h}/shares/${zIds[0]}`)).status, 404);
  t.is((await hub.call('GET', `${hub.h}/shares`)).json.totalElements, 2);
});

test('bad input is a 400 naming the property, and nothing is written', async (t) => {
  const hub = await stack.hub();
  const other = await stack.hub();
  const otherEnv = await other.call('POST', `${other.h}/environments`, { body: {} });
  const cases: [string, unknown, string | string[]][] = [
    ['no name', { frontendIds: [publicFrontendId], target: 'http://x' }, '$.name'],
    ['no frontends', share({ frontendIds: [] }), '$.frontendIds'],
    ['frontendIds not an array', share({ frontendIds: publicFrontendId }), '$.frontendIds'],
    ['unknown frontend', share({ frontendIds: ['nope'] }), ['$.frontendIds', 'nope']],
    ['relative target', share({ target: '/app' }), '$.target'],
    ['ftp target', share({ target: 'ftp://files.example.com' }), '$.target'],
    ['target wrong type', share({ target: 42 }), '$.target'],
    ["another hub's environment", share({ envZId: otherEnv.json.envZId }), '$.envZId'],
    ['unknown auth provider', share({ authProviderId: 'nope' }), '$.authProviderId'],
  ];
  for (const [, body, names] of cases) assertRefused(t, await createShare(hub, body), 400, 'invalid_request', 'EH_INVALID_REQUEST', names);
  t.is((await hub.call('GET', `${hub.h}/shares`)).json.totalElements, 0);
  t.is((await hub.call('GET', `${hub.h}/executions?resourceType=share`)).json.totalElements, 0, 'no share execution either');
});

test('a share with an auth provider reports its OAuth settings', async (t) => {
  const hub = await stack.hub();
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: { name: 'gh', type: 'GITHUB', config: { clientId: 'c', clientSecret: 's' }, emailPatterns: ['*@example.com', 'bob@example.org'] },
  });
  const created = await createShare(hub, share({ authProviderId: provider.json.id }));
  t.is(created.status, 201, created.text);
  t.like(created.json, { authProviderId: provider.json.id, oauthProvider: 'github', oauthEmailDomains: ['example.com', 'example.org'] });
  const busy = await hub.call('DELETE', `${hub.h}/auth-providers/${provider.json.id}`);
  assertRefused(t, busy, 400, 'invalid_request', 'EH_IN_USE');
});

test('hub isolation: another hub gets 404 for the share and 403 on the foreign path', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const { zId } = (await createShare(a, share())).json;
  for (const method of ['GET', 'DELETE']) {
    const r = await b.call(method, `${b.h}/shares/${zId}`);
    t.is(r.status, 404, method);
    t.is(r.json.error, 'not_found');
    const foreign = await b.call(method, `${a.h}/shares/${zId}`);
    t.is(foreign.status, 403, method);
    t.is(foreign.json.error, 'not_found');
  }
  t.is((await b.call('GET', `${b.h}/shares`)).json.totalElements, 0);
  t.is((await a.call('GET', `${a.h}/shares/${zId}`)).status, 200);
});

test('inspect is refused where nothing would be recorded: a TCP share, a share speaking HTTP/2 to its target; on create and on PATCH', async (t) => {
  const hub = await stack.hub();
  const before = (await hub.call('GET', `${hub.h}/shares`)).json.totalElements;
  for (const extra of [{ protocol: 'tcp', target: 'tcp://10.0.0.5:5432' }, { targetProtocol: 'h2' }]) {
    const r = await hub.call('POST', `${hub.h}/shares`, { body: share({ ...extra, inspect: true }) });
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.inspect');
  }
  t.is((await hub.call('GET', `${hub.h}/shares`)).json.totalElements, before, 'nothing written');
  for (const extra of [{ protocol: 'tcp', target: 'tcp://10.0.0.5:5432' }, { targetProtocol: 'h2' }]) {
    const made = await hub.call('POST', `${hub.h}/shares`, { body: share(extra) });
    t.is(made.status, 201, made.text);
    const patched = await hub.call('PATCH', `${hub.h}/shares/${made.json.zId}`, { body: { inspect: true } });
    assertRefused(t, patched, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.inspect');
    t.false((await hub.call('GET', `${hub.h}/shares/${made.json.zId}`)).json.inspect);
  }
});
