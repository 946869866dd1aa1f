import test from 'ava';
import { useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false });

const envs = (prefix: string) => `${prefix}/environments`;

test('Bearer and Basic both authenticate, under both path prefixes', async (t) => {
  const hub = await stack.hub();
  for (const auth of [hub.bearer, hub.basic]) {
    for (const prefix of [hub.h, hub.h2]) {
      const r = await stack.call('GET', envs(prefix), { auth });
      t.is(r.status, 200, `${auth.split(' ')[0]} ${prefix}`);
      t.deepEqual(r.json.content, []);
    }
  }
});

test('missing, malformed, unknown and revoked credentials are 401 unauthorized', async (t) => {
  const hub = await stack.hub();
  const cases: [string, string | undefined][] = [
    ['no header', undefined],
    ['unknown scheme', `Token ${hub.token}`],
    ['two spaces', `Bearer  ${hub.token}`],
    ['bearer without token', 'Bearer'],
    ['basic not base64', 'Basic %%%'],
    ['basic without colon', 'Basic ' + Buffer.from(hub.token).toString('base64')],
    ['basic with wrong username', 'Basic ' + Buffer.from(`someone:${hub.token}`).toString('base64')],
    ['unknown token', 'Bearer ehk_not-a-real-token'],
  ];
  for (const [what, auth] of cases) {
    const r = await stack.call('GET', envs(hub.h), { auth: auth ?? '' });
    t.is(r.status, 401, what);
    t.is(r.json.error, 'unauthorized', what);
    t.is(typeof r.json.message, 'string', what);
  }
  const revoke = await stack.call('DELETE', `/admin/v1/hubs/${hub.hubId}/api-keys/${hub.keyId}`, { auth: stack.admin });
  t.is(revoke.status, 200);
  for (const auth of [hub.bearer, hub.basic]) {
    const r = await stack.call('GET', envs(hub.h), { auth });
    t.is(r.status, 401, 'revoked key stops working at once');
    t.is(r.json.error, 'unauthorized');
  }
});

test("a key on another hub's path, or an unknown hub, is 403 not_found", async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  for (const path of [envs(b.h), envs(b.h2), envs('/hub/00000000-0000-0000-0000-000000000000')]) {
    const r = await a.call('GET', path);
    assertRefused(t, r, 403, 'not_found', 'EH_NOT_AUTHORIZED');
  }
  const r = await stack.call('GET', envs('/hub/no-such-hub'), { auth: stack.admin });
  t.is(r.status, 403, 'the operator token on an unknown hub');
});

test('the operator API needs the admin token', async (t) => {
  const hub = await stack.hub();
  const none = await stack.call('POST', '/admin/v1/hubs', { body: { name: 'x' } });
  t.is(none.status, 401);
  t.is(none.json.error, 'unauthorized');
  const withKey = await stack.call('POST', '/admin/v1/hubs', { auth: hub.bearer, body: { name: 'x' } });
  t.is(withKey.status, 403);
  t.is(withKey.json.error, 'forbidden');
  const adminBasic = 'Basic ' + Buffer.from(`admin:${stack.adminToken}`).toString('base64');
  const ok = await stack.call('GET', `/admin/v1/hubs/${hub.hubId}`, { auth: adminBasic });
  t.is(ok.status, 200);
  t.is(ok.json.id, hub.hubId);
});

test('the queue UI is behind the admin token and asks browsers for it', async (t) => {
  const none = await stack.call('GET', '/admin/queues');
  t.is(none.status, 401);
  t.regex(none.headers.get('www-authenticate') ?? '', /^Basic /);
  const ok = await stack.call('GET', '/admin/queues', { auth: stack.admin, headers: { accept: 'text/html' } });
  t.is(ok.status, 200);
  t.regex(ok.text, /<html/i);
  const api = await stack.call('GET', '/admin/queues/api/queues', { auth: stack.admin });
  t.is(api.status, 200);
  const names = api.json.queues.map((q: { name: string }) => q.name).sort();
  t.deepEqual(names, ['frontends', 'health-checks', 'ipsec', 'metrics', 'pki', 'shares'], 'every queue shown has workers; no idle system queue');
});
