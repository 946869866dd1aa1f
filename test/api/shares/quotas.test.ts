/**
 * Per-hub quotas on shares: how many shares a hub may hold (HUB_MAX_SHARES) and how many of them may be TCP shares,
 * each holding one edge port (HUB_MAX_TCP_PORTS), or the hub's own quotas the operator set. A hub at its quota gets
 * 429 `quota_exceeded` and nothing is written, while other hubs go on creating; concurrent creates never pass it.
 */
import test from 'ava';
import { publicFrontendId } from '../../helpers/edge.js';
import { assertRefused } from '../../helpers/refusals.js';
import { type HubFixture, useStack } from '../../helpers/stack.js';

const stack = useStack(test, { workers: false, env: { HUB_MAX_SHARES: '4', HUB_MAX_TCP_PORTS: '2' } });

async function body(hub: HubFixture, name: string, tcp = false) {
  const frontendIds = [await publicFrontendId(hub)];
  return tcp ? { name, frontendIds, protocol: 'tcp', target: 'tcp://10.0.0.5:5432' } : { name, frontendIds, target: 'http://127.0.0.1:9' };
}
const create = async (hub: HubFixture, name: string, tcp = false) => hub.call('POST', `${hub.h}/shares`, { body: await body(hub, name, tcp) });
const held = async (hub: HubFixture) =>
  (await stack.sql.query('SELECT count(*)::int AS shares, count(tcp_port)::int AS tcp FROM shares WHERE hub_id = $1', [hub.hubId])).rows[0] as {
    shares: number;
    tcp: number;
  };
const patchQuotas = (hub: HubFixture, quotas: unknown) => stack.call('PATCH', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin, body: { quotas } });

test('a hub at its share quota gets 429 quota_exceeded and nothing is written; another hub still creates', async (t) => {
  const [greedy, other] = await Promise.all([stack.hub({ name: 'greedy' }), stack.hub({ name: 'other' })]);
  for (let i = 0; i < 4; i++) t.is((await create(greedy, `s${i}`, i === 0)).status, 201);
  for (const tcp of [false, true]) {
    const refused = await create(greedy, `over-${tcp}`, tcp);
    assertRefused(t, refused, 429, 'quota_exceeded', 'EH_QUOTA_EXCEEDED', ['4 shares', 'quotas.shares: 4']);
  }
  t.deepEqual(await held(greedy), { shares: 4, tcp: 1 }, 'no share and no port taken past the quota');
  t.is((await greedy.call('GET', `${greedy.h}/shares`)).json.totalElements, 4);
  // the other hub has its own quota
  t.is((await create(other, 'mine')).status, 201);
  t.is((await create(other, 'mine-tcp', true)).status, 201);
  // deleting a share makes room
  const first = (await greedy.call('GET', `${greedy.h}/shares?sort=createdAt,asc&size=1`)).json.content[0];
  t.is((await greedy.call('DELETE', `${greedy.h}/shares/${first.zId}`)).status, 204);
  t.is((await create(greedy, 'again')).status, 201);
});

test('a hub holds at most its TCP port quota of TCP shares; HTTP shares still fit', async (t) => {
  const [hub, other] = await Promise.all([stack.hub({ name: 'ports' }), stack.hub({ name: 'ports-other' })]);
  t.is((await create(hub, 't1', true)).status, 201);
  t.is((await create(hub, 't2', true)).status, 201);
  const refused = await create(hub, 't3', true);
  assertRefused(t, refused, 429, 'quota_exceeded', 'EH_QUOTA_EXCEEDED', ['2 TCP shares', 'quotas.tcpPorts: 2']);
  t.deepEqual(await held(hub), { shares: 2, tcp: 2 });
  t.is((await create(hub, 'web')).status, 201, 'an HTTP share holds no port');
  t.is((await create(other, 't1', true)).status, 201, 'another hub still gets a port');
});

test('concurrent creates at the edge of the quota never exceed it', async (t) => {
  const hub = await stack.hub({ name: 'racer' });
  const bodies = await Promise.all(Array.from({ length: 12 }, (_, i) => body(hub, `race-${i}`, i % 2 === 0)));
  const answers = await Promise.all(bodies.map((b) => hub.call('POST', `${hub.h}/shares`, { body: b })));
  const statuses = answers.map((a) => a.status).sort();
  t.is(statuses.filter((s) => s === 201).length, 4, JSON.stringify(statuses));
  t.is(statuses.filter((s) => s === 429).length, 8, JSON.stringify(statuses));
  const now = await held(hub);
  t.is(now.shares, 4);
  t.true(now.tcp <= 2);

  // TCP shares alone, against a TCP quota of 3 (and room for 20 shares)
  const ports = await stack.hub({ name: 'port-racer' });
  t.is((await patchQuotas(ports, { shares: 20, tcpPorts: 3 })).status, 200);
  const tcpBodies = await Promise.all(Array.from({ length: 10 }, (_, i) => body(ports, `tcp-${i}`, true)));
  const tcpAnswers = await Promise.all(tcpBodies.map((b) => ports.call('POST', `${ports.h}/shares`, { body: b })));
  t.deepEqual(tcpAnswers.map((a) => a.status).sort(), [201, 201, 201, 429, 429, 429, 429, 429, 429, 429]);
  t.deepEqual(await held(ports), { shares: 3, tcp: 3 });
});

test("the operator sets a hub's quotas: shown in its answer, a raised quota lets the create through, null returns to the default", async (t) => {
  const hub = await stack.hub({ name: 'raised' });
  const shown = await stack.call('GET', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin });
  t.deepEqual(shown.json.quotas, { shares: 4, tcpPorts: 2 }, 'the defaults');
  for (let i = 0; i < 2; i++) t.is((await create(hub, `t${i}`, true)).status, 201);
  t.is((await create(hub, 't2', true)).status, 429);

  const raised = await patchQuotas(hub, { tcpPorts: 3 });
  t.is(raised.status, 200, raised.text);
  t.deepEqual(raised.json.quotas, { shares: 4, tcpPorts: 3 });
  t.is(raised.json.name, 'raised', 'the rest of the hub as it was');
  t.is((await create(hub, 't2', true)).status, 201, 'the raised quota lets it through');
  t.is((await create(hub, 'web')).status, 201);
  t.is((await create(hub, 'web-2')).status, 429, 'four shares: the share quota now');
  t.is((await patchQuotas(hub, { shares: 10 })).json.quotas.tcpPorts, 3, 'one quota changed, the other kept');
  t.is((await create(hub, 'web-2')).status, 201);

  // lowered below what the hub holds: what it holds stays, nothing new
  const lowered = await patchQuotas(hub, { shares: 1, tcpPorts: 0 });
  t.deepEqual(lowered.json.quotas, { shares: 1, tcpPorts: 0 });
  t.deepEqual(await held(hub), { shares: 5, tcp: 3 });
  t.is((await create(hub, 'web-3')).status, 429);
  // null: the service's defaults again
  const reset = await patchQuotas(hub, { shares: null, tcpPorts: null });
  t.deepEqual(reset.json.quotas, { shares: 4, tcpPorts: 2 });
  t.deepEqual(
    (await stack.call('GET', '/admin/v1/hubs?size=1000', { auth: stack.admin })).json.content.find((h: { id: string }) => h.id === hub.hubId).quotas,
    { shares: 4, tcpPorts: 2 },
  );

  // a hub made with its own quotas
  const made = await stack.call('POST', '/admin/v1/hubs', { auth: stack.admin, body: { name: 'no-tcp', quotas: { tcpPorts: 0 } } });
  t.is(made.status, 201, made.text);
  t.deepEqual(made.json.quotas, { shares: 4, tcpPorts: 0 });
});

test('bad quota values are 400 naming the property, and change nothing', async (t) => {
  const hub = await stack.hub({ name: 'bad' });
  t.is((await patchQuotas(hub, { shares: 7, tcpPorts: 1 })).status, 200);
  const cases: [unknown, string][] = [
    [{ shares: -1 }, '$.quotas.shares'],
    [{ shares: 1.5 }, '$.quotas.shares'],
    [{ shares: '10' }, '$.quotas.shares'],
    [{ shares: true }, '$.quotas.shares'],
    [{ shares: 10_000_000 }, '$.quotas.shares'],
    [{ tcpPorts: 70_000 }, '$.quotas.tcpPorts'],
    [{ tcpPorts: -5 }, '$.quotas.tcpPorts'],
    [{ ports: 3 }, '$.quotas'],
    [[], '$.quotas'],
    ['many', '$.quotas'],
    [null, '$.quotas'],
  ];
  for (const [quotas, property] of cases) {
    const r = await patchQuotas(hub, quotas);
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', property);
  }
  const created = await stack.call('POST', '/admin/v1/hubs', { auth: stack.admin, body: { name: 'bad-new', quotas: { tcpPorts: -1 } } });
  assertRefused(t, created, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.quotas.tcpPorts');
  t.deepEqual((await stack.call('GET', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin })).json.quotas, { shares: 7, tcpPorts: 1 }, 'unchanged');
});
