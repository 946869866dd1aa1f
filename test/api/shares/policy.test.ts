import test from 'ava';
import { type HubFixture, useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);
let frontendId: string;
test.before(async () => {
  const hub = await stack.hub();
  const frontends = await hub.call('GET', `${hub.h}/frontends`);
  frontendId = frontends.json.find((f: { publicName: string }) => f.publicName === 'public').id;
});

const share = (overrides: Record<string, unknown> = {}) => ({ name: 'web', frontendIds: [frontendId], target: 'http://10.0.0.5:8080/app', ...overrides });
const create = (hub: HubFixture, body: unknown) => hub.call('POST', `${hub.h}/shares`, { body });
const patch = (hub: HubFixture, zId: string, body: unknown) => hub.call('PATCH', `${hub.h}/shares/${zId}`, { body });

const full = {
  ipAllow: ['203.0.113.0/24', '2001:db8::/32'],
  ipDeny: ['203.0.113.7/32'],
  rateLimit: { requests: 100, per: 'PT1M', by: 'client-ip' },
  basicAuth: [{ user: 'demo', password: 'at least 8 characters' }],
  requestHeaders: { set: { 'X-Team': 'blue' }, remove: ['X-Debug'] },
  responseHeaders: { set: { 'Cache-Control': 'no-store' }, remove: ['Server'] },
  errorPages: { '502': '<h1>down</h1>', '503': '<h1>later</h1>', '504': '<h1>slow</h1>' },
  maintenance: false,
};

test('a policy on create is shown on every answer, basic auth users without passwords; none is {}', async (t) => {
  const hub = await stack.hub();
  const created = await create(hub, share({ policy: full }));
  t.is(created.status, 201, created.text);
  const { basicAuth: _, ...rest } = full;
  t.deepEqual(created.json.policy, { ...rest, basicAuth: [{ user: 'demo' }] });
  t.false(created.text.includes('at least 8 characters'));
  t.false(created.text.includes('scrypt'));
  const got = await hub.call('GET', `${hub.h}/shares/${created.json.zId}`);
  t.deepEqual(got.json.policy, created.json.policy);
  const listed = await hub.call('GET', `${hub.h}/shares`);
  t.deepEqual(listed.json.content.find((s: { zId: string }) => s.zId === created.json.zId).policy, created.json.policy);
  // the password is stored as a scrypt hash, never as itself
  const { rows } = await stack.sql.query('SELECT policy::text AS p FROM shares WHERE z_id = $1', [created.json.zId]);
  t.false(rows[0].p.includes('at least 8 characters'));
  t.regex(rows[0].p, /scrypt\$/);
  const plain = await create(hub, share());
  t.deepEqual(plain.json.policy, {});
  // `by` defaults to the client address
  const defaulted = await create(hub, share({ policy: { rateLimit: { requests: 5, per: 'PT1S' } } }));
  t.deepEqual(defaulted.json.policy, { rateLimit: { requests: 5, per: 'PT1S', by: 'client-ip' } });
});

test('PATCH replaces the policy, keeps a named user without a password, and null clears it', async (t) => {
  const hub = await stack.hub();
  const created = await create(hub, share({ policy: { basicAuth: [{ user: 'demo', password: 'first password' }] } }));
  const zId = created.json.zId;
  const before = (await stack.sql.query('SELECT policy FROM shares WHERE z_id = $1', [zId])).rows[0].policy;
  const kept = await patch(hub, zId, { policy: { ipDeny: ['10.0.0.0/8'], basicAuth: [{ user: 'demo' }] } });
  t.is(kept.status, 200, kept.text);
  t.deepEqual(kept.json.policy, { ipDeny: ['10.0.0.0/8'], basicAuth: [{ user: 'demo' }] });
  const after = (await stack.sql.query('SELECT policy FROM shares WHERE z_id = $1', [zId])).rows[0].policy;
  t.is(after.basicAuth[0].hash, before.basicAuth[0].hash);
  const unknownUser = await patch(hub, zId, { policy: { basicAuth: [{ user: 'other' }] } });
  assertRefused(t, unknownUser, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.policy.basicAuth[0].password');
  const cleared = await patch(hub, zId, { policy: null });
  t.is(cleared.status, 200);
  t.deepEqual(cleared.json.policy, {});
  const untouched = await patch(hub, zId, { inspect: true });
  t.deepEqual(untouched.json.policy, {});
});

test('bad input: 400 invalid_request naming the field, and nothing changed', async (t) => {
  const hub = await stack.hub();
  const created = await create(hub, share({ policy: { ipAllow: ['198.51.100.0/24'] } }));
  const zId = created.json.zId;
  const cases: [unknown, string][] = [
    [{ ipAllow: ['203.0.113.0/33'] }, '$.policy.ipAllow[0]'],
    [{ ipAllow: ['not-an-address/8'] }, '$.policy.ipAllow[0]'],
    [{ ipDeny: ['10.0.0.0/8', '2001:db8::/129'] }, '$.policy.ipDeny[1]'],
    [{ ipAllow: [] }, '$.policy.ipAllow'],
    [{ rateLimit: { requests: 0, per: 'PT1M' } }, '$.policy.rateLimit.requests'],
    [{ rateLimit: { requests: 5, per: 'soon' } }, '$.policy.rateLimit.per'],
    [{ rateLimit: { requests: 5, per: 'PT1M', by: 'moon' } }, '$.policy.rateLimit.by'],
    [
      {
        basicAuth: [
          { user: 'a', password: 'long enough' },
          { user: 'a', password: 'long enough too' },
        ],
      },
      '$.policy.basicAuth[1].user',
    ],
    [{ basicAuth: [{ user: 'a', password: 'short' }] }, '$.policy.basicAuth[0].password'],
    [{ basicAuth: [{ user: 'a:b', password: 'long enough' }] }, '$.policy.basicAuth[0].user'],
    [{ requestHeaders: { set: { 'Bad Name': 'x' } } }, '$.policy.requestHeaders.set'],
    [{ requestHeaders: { set: { 'X-Ok': 'line\r\nInjected: yes' } } }, '$.policy.requestHeaders.set.X-Ok'],
    [{ requestHeaders: { set: { 'X-Forwarded-For': '1.2.3.4' } } }, '$.policy.requestHeaders.set'],
    [{ requestHeaders: { remove: ['X-Client-Certificate-Name'] } }, '$.policy.requestHeaders.remove[0]'],
    [{ requestHeaders: { remove: ['x-forwarded-email'] } }, '$.policy.requestHeaders.remove[0]'],
    [{ responseHeaders: { set: { 'Content-Length': '1' } } }, '$.policy.responseHeaders.set'],
    [{ responseHeaders: { remove: ['Keep-Alive'] } }, '$.policy.responseHeaders.remove[0]'],
    [{ requestHeaders: { set: { 'HTTP2-Settings': 'x' } } }, '$.policy.requestHeaders.set'],
    [{ errorPages: { '502': 'x'.repeat(64 * 1024 + 1) } }, '$.policy.errorPages.502'],
    [{ errorPages: { '500': 'x' } }, "'$.policy.errorPages.500'"],
    [{ ipAlow: ['10.0.0.0/8'] }, "'$.policy.ipAlow'"],
    [{ maintenance: 'yes' }, '$.policy.maintenance'],
  ];
  for (const [policy, field] of cases) {
    const onCreate = await create(hub, share({ name: 'bad', policy }));
    assertRefused(t, onCreate, 400, 'invalid_request', 'EH_INVALID_REQUEST', field);
    const onPatch = await patch(hub, zId, { policy });
    assertRefused(t, onPatch, 400, 'invalid_request', 'EH_INVALID_REQUEST', field);
  }
  const listed = await hub.call('GET', `${hub.h}/shares`);
  t.is(listed.json.content.filter((s: { name: string }) => s.name === 'bad').length, 0, 'no share was made');
  const got = await hub.call('GET', `${hub.h}/shares/${zId}`);
  t.deepEqual(got.json.policy, { ipAllow: ['198.51.100.0/24'] }, 'the policy is unchanged');
});

test('a TCP share takes IP rules only; basic auth does not go with an auth provider', async (t) => {
  const hub = await stack.hub();
  const tcp = await create(hub, share({ protocol: 'tcp', target: 'tcp://10.0.0.5:5432', policy: { ipAllow: ['10.0.0.0/8'], ipDeny: ['10.0.0.9/32'] } }));
  t.is(tcp.status, 201, tcp.text);
  t.deepEqual(tcp.json.policy, { ipAllow: ['10.0.0.0/8'], ipDeny: ['10.0.0.9/32'] });
  for (const policy of [{ rateLimit: { requests: 5, per: 'PT1M' } }, { maintenance: true }, { basicAuth: [{ user: 'a', password: 'long enough' }] }]) {
    const field = Object.keys(policy)[0];
    assertRefused(
      t,
      await create(hub, share({ protocol: 'tcp', target: 'tcp://10.0.0.5:5432', policy })),
      400,
      'invalid_request',
      'EH_INVALID_REQUEST',
      `$.policy.${field}`,
    );
    assertRefused(t, await patch(hub, tcp.json.zId, { policy }), 400, 'invalid_request', 'EH_INVALID_REQUEST', `$.policy.${field}`);
  }
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: { name: 'google', type: 'GOOGLE', config: { clientId: 'c', clientSecret: 's' } },
  });
  t.is(provider.status, 201, provider.text);
  const basic = { basicAuth: [{ user: 'a', password: 'long enough' }] };
  assertRefused(
    t,
    await create(hub, share({ authProviderId: provider.json.id, policy: basic })),
    400,
    'invalid_request',
    'EH_INVALID_REQUEST',
    '$.policy.basicAuth',
  );
  const withBasic = await create(hub, share({ policy: basic }));
  assertRefused(
    t,
    await patch(hub, withBasic.json.zId, { authProviderId: provider.json.id }),
    400,
    'invalid_request',
    'EH_INVALID_REQUEST',
    '$.authProviderId',
  );
  const withLogin = await create(hub, share({ authProviderId: provider.json.id }));
  assertRefused(t, await patch(hub, withLogin.json.zId, { policy: basic }), 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.policy.basicAuth');
  t.deepEqual((await hub.call('GET', `${hub.h}/shares/${withLogin.json.zId}`)).json.policy, {});
});
