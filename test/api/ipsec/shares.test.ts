import test from 'ava';
import { useTestIpsecProvider, waitForStatus } from '../../helpers/ipsec.js';
import { useStack, waitFor, type HubFixture } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

// the provider first: its gates are released before the stack stops (a held job would keep the worker waiting)
const provider = useTestIpsecProvider(test);
const stack = useStack(test);
const hold = (key: string) => provider.hold(key);
interface Setup {
  hub: HubFixture;
  tunnelId: string;
  envZId: string;
  shareBody: (over?: Record<string, unknown>) => Record<string, unknown>;
  sharePath: (id: string) => string;
}

/** An IPsec hub with a DEPLOYED tunnel and an environment. */
async function setup(locationId = 'main'): Promise<Setup> {
  const hub = await stack.hub({ ipsec: true });
  const tunnel = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, {
    body: { name: 'dc', peerPublicIp: '203.0.113.50', peerCidr: '10.20.0.0/16', locationId },
  });
  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${tunnel.json.id}`, 'DEPLOYED');
  const env = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'agent' } });
  return {
    hub,
    tunnelId: tunnel.json.id,
    envZId: env.json.envZId,
    shareBody: (over = {}) => ({ name: 'db', ipsecTunnelId: tunnel.json.id, envZId: env.json.envZId, target: 'db.internal:5432', ingressPort: 5432, ...over }),
    sharePath: (id) => `${hub.h2}/ipsec-shares/${id}`,
  };
}

async function deployedShare(s: Setup, over: Record<string, unknown> = {}) {
  const r = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody(over) });
  if (r.status !== 202) throw new Error(`create failed: ${r.status} ${r.text}`);
  return waitForStatus(s.hub, s.sharePath(r.json.id), 'DEPLOYED');
}

const liveListeners = async (shareId: string) =>
  (await stack.sql.query('SELECT ingress_port, target, listener_id FROM ipsec_local_listeners WHERE share_id = $1 AND released_at IS NULL', [shareId])).rows;

test('create answers 202 at NEW, then DEPLOYED with a listener on the tunnel load balancer', async (t) => {
  const s = await setup();
  const created = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ locationId: 'rack-1' }) });
  t.is(created.status, 202);
  t.like(created.json, {
    name: 'db',
    hubId: s.hub.hubId,
    ipsecTunnelId: s.tunnelId,
    envZId: s.envZId,
    target: 'db.internal:5432',
    ingressPort: 5432,
    locationId: 'rack-1',
    status: 'NEW',
  });
  t.regex(created.headers.get('location') ?? '', /^\/hub\/[^/]+\/executions\/[0-9a-f-]{36}$/);
  const deployed = await waitForStatus(s.hub, s.sharePath(created.json.id), 'DEPLOYED');
  t.is(deployed.id, created.json.id);
  t.is((await s.hub.call('GET', `${s.hub.h}/ipsec-shares/${created.json.id}`)).json.status, 'DEPLOYED', 'both prefixes');
  const listeners = await liveListeners(created.json.id);
  t.is(listeners.length, 1);
  t.like(listeners[0], { ingress_port: 5432, target: 'db.internal:5432' });
  const execution = await s.hub.call('GET', created.headers.get('location')!);
  t.like(execution.json, { type: 'ipsec.provisionShare', status: 'SUCCEEDED', resourceType: 'ipsecShare', resourceId: created.json.id });

  // envId is accepted as an alias of envZId
  const alias = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, {
    body: { name: 'web', ipsecTunnelId: s.tunnelId, envId: s.envZId, target: '10.20.1.5:443', ingressPort: 443 },
  });
  t.is(alias.status, 202);
  t.is(alias.json.envZId, s.envZId);
  t.is(alias.json.locationId, null);
});

test('validation of name, references, target and ingressPort; nothing is written', async (t) => {
  const s = await setup();
  const other = await setup();
  // each refusal names the property it is about
  const cases: [Record<string, unknown>, string][] = [
    [{ name: undefined }, '$.name'],
    [{ name: '' }, '$.name'],
    [{ name: '-db' }, '$.name'],
    [{ name: 'db-' }, '$.name'],
    [{ name: 'my_db' }, '$.name'],
    [{ name: 'a'.repeat(64) }, '$.name'],
    [{ name: 'd b' }, '$.name'],
    [{ ipsecTunnelId: undefined }, '$.ipsecTunnelId'],
    [{ ipsecTunnelId: 'no-such-tunnel' }, '$.ipsecTunnelId'],
    [{ ipsecTunnelId: other.tunnelId }, '$.ipsecTunnelId'],
    [{ envZId: undefined }, '$.envZId'],
    [{ envZId: 'nosuchenv' }, '$.envZId'],
    [{ envZId: other.envZId }, '$.envZId'],
    [{ envId: 'different' }, '$.envZId'],
    [{ target: undefined }, '$.target'],
    [{ target: 'db.internal' }, '$.target'],
    [{ target: 'db.internal:0' }, '$.target'],
    [{ target: 'db.internal:70000' }, '$.target'],
    [{ target: 'http://db.internal:5432' }, '$.target'],
    [{ target: '-bad-.internal:80' }, '$.target'],
    [{ target: '300.1.1.1:80' }, '$.target'],
    [{ ingressPort: undefined }, '$.ingressPort'],
    [{ ingressPort: 0 }, '$.ingressPort'],
    [{ ingressPort: 65536 }, '$.ingressPort'],
    [{ ingressPort: 80.5 }, '$.ingressPort'],
    [{ ingressPort: '80' }, '$.ingressPort'],
  ];
  for (const [over, path] of cases) {
    const r = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody(over) });
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', path);
  }
  const all = await s.hub.call('GET', `${s.hub.h2}/ipsec-shares?status=NEW&status=DEPLOYED&status=ERROR&status=DELETING&status=DELETED`);
  t.is(all.json.totalElements, 0, 'nothing written');

  // accepted edge values
  for (const [i, over] of [
    { name: 'a'.repeat(63), ingressPort: 1, target: '[fd00::1]:80' },
    { name: 'A1-b2', ingressPort: 65535, target: '10.20.0.9:65535' },
    { name: 'x', ingressPort: 8080, target: 'svc:8080' },
  ].entries()) {
    t.is((await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody(over) })).status, 202, `case ${i}`);
  }
});

test('ingressPort is unique per tunnel and name per hub among live shares (409), also when racing', async (t) => {
  const s = await setup();
  const first = await deployedShare(s);
  const port = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ name: 'db2' }) });
  assertRefused(t, port, 409, 'conflict', 'EH_PORT_IN_USE', 'ingressPort 5432');
  const name = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ name: 'DB', ingressPort: 5433 }) });
  assertRefused(t, name, 409, 'conflict', 'EH_NAME_TAKEN', "'DB'");

  const racers = await Promise.all(
    Array.from({ length: 5 }, (_, i) => s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ name: `racer-${i}`, ingressPort: 9000 }) })),
  );
  t.deepEqual(racers.map((r) => r.status).sort(), [202, 409, 409, 409, 409]);

  // the same port on another hub's tunnel is fine
  const other = await setup();
  t.is((await other.hub.call('POST', `${other.hub.h2}/ipsec-shares`, { body: other.shareBody() })).status, 202);

  // a DELETED share frees its port and its name
  t.is((await s.hub.call('DELETE', s.sharePath(first.id))).status, 202);
  await waitForStatus(s.hub, s.sharePath(first.id), 'DELETED');
  t.is((await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody() })).status, 202);
});

test('shares need a DEPLOYED tunnel of the hub', async (t) => {
  const s = await setup();
  const release = hold('held-tunnel');
  const fresh = await s.hub.call('POST', `${s.hub.h2}/ipsec-tunnels`, {
    body: { name: 'held-tunnel', peerPublicIp: '203.0.113.51', peerCidr: '10.30.0.0/16', locationId: 'b' },
  });
  const r = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ ipsecTunnelId: fresh.json.id }) });
  // names the tunnel's state
  assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_STATE', 'is NEW');
  release();
  await waitForStatus(s.hub, `${s.hub.h2}/ipsec-tunnels/${fresh.json.id}`, 'DEPLOYED');
  t.is((await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ ipsecTunnelId: fresh.json.id }) })).status, 202);
});

test('list: paging and repeatable filters (status twice, target, envZId/envId, ingressPort); DELETED only on request', async (t) => {
  const s = await setup();
  const env2 = (await s.hub.call('POST', `${s.hub.h}/environments`, { body: { description: 'second' } })).json.envZId;
  const a = await deployedShare(s, { name: 'alpha', ingressPort: 1001, target: 'a.internal:80' });
  const b = await deployedShare(s, { name: 'bravo', ingressPort: 1002, target: 'b.internal:80', envZId: env2 });
  const c = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ name: 'fail-charlie', ingressPort: 1003 }) });
  await waitForStatus(s.hub, s.sharePath(c.json.id), 'ERROR');
  const d = await deployedShare(s, { name: 'delta', ingressPort: 1004 });
  await s.hub.call('DELETE', s.sharePath(d.id));
  await waitForStatus(s.hub, s.sharePath(d.id), 'DELETED');

  const list = (q: string) => s.hub.call('GET', `${s.hub.h2}/ipsec-shares${q}`);
  const ids = (r: { json: { content: { id: string }[] } }) => r.json.content.map((x) => x.id);
  const page = await list('?size=2&sort=name,asc');
  t.is(page.json.totalElements, 3);
  t.is(page.json.totalPages, 2);
  t.deepEqual(ids(page), [a.id, b.id]);
  t.deepEqual(ids(await list('?size=2&page=1&sort=name,asc')), [c.json.id]);
  t.deepEqual(ids(await list('?status=DEPLOYED&status=ERROR&sort=name')), [a.id, b.id, c.json.id]);
  t.deepEqual(ids(await list('?status=ERROR')), [c.json.id]);
  t.deepEqual(ids(await list('?status=DELETED')), [d.id]);
  t.deepEqual(ids(await list('?target=b.internal:80')), [b.id]);
  t.deepEqual(ids(await list(`?envZId=${env2}`)), [b.id]);
  t.deepEqual(ids(await list(`?envId=${env2}`)), [b.id]);
  t.deepEqual(ids(await list('?ingressPort=1001&ingressPort=1003&sort=ingressPort,desc')), [c.json.id, a.id]);
  t.deepEqual(ids(await list(`?ipsecTunnelId=${s.tunnelId}&name=alpha`)), [a.id]);
  for (const q of ['?ingressPort=http', '?status=GONE', '?flavour=x', '?sort=flavour']) {
    const r = await list(q);
    t.is(r.status, 400, q);
    t.is(r.json.error, 'invalid_request', q);
  }
});

test('PUT needs every required field and PATCH only changes; both go NEW and re-provision', async (t) => {
  const s = await setup();
  const share = await deployedShare(s);
  const before = await liveListeners(share.id);

  const incomplete = await s.hub.call('PUT', s.sharePath(share.id), { body: { name: 'db', target: 'db.internal:5432' } });
  assertRefused(t, incomplete, 400, 'invalid_request', 'EH_INVALID_REQUEST', ['$.ipsecTunnelId', '$.ingressPort']);

  const put = await s.hub.call('PUT', s.sharePath(share.id), { body: s.shareBody({ target: 'db2.internal:5432', ingressPort: 6432 }) });
  t.is(put.status, 202);
  t.like(put.json, { status: 'NEW', target: 'db2.internal:5432', ingressPort: 6432 });
  t.regex(put.headers.get('location') ?? '', /\/executions\//);
  await waitForStatus(s.hub, s.sharePath(share.id), 'DEPLOYED');
  const afterPut = await liveListeners(share.id);
  t.is(afterPut.length, 1);
  t.like(afterPut[0], { ingress_port: 6432, target: 'db2.internal:5432' });
  t.not(afterPut[0].listener_id, before[0].listener_id, 'the share was recreated');
  // its old port is free again
  t.is((await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ name: 'other' }) })).status, 202);

  const patch = await s.hub.call('PATCH', s.sharePath(share.id), { body: { name: 'renamed' } });
  t.is(patch.status, 202);
  t.like(patch.json, { status: 'NEW', name: 'renamed', target: 'db2.internal:5432', ingressPort: 6432, envZId: s.envZId });
  const patched = await waitForStatus(s.hub, s.sharePath(share.id), 'DEPLOYED');
  t.is(patched.name, 'renamed');

  t.is((await s.hub.call('PATCH', s.sharePath(share.id), { body: {} })).status, 400);
  const badPatch = await s.hub.call('PATCH', s.sharePath(share.id), { body: { ingressPort: 5432 } });
  t.is(badPatch.status, 409, 'the port "other" holds');
  const invalid = await s.hub.call('PATCH', s.sharePath(share.id), { body: { target: 'nope' } });
  t.is(invalid.status, 400);
  t.is((await s.hub.call('GET', s.sharePath(share.id))).json.status, 'DEPLOYED', 'a refused update changes nothing');

  const audit = await s.hub.call('GET', `${s.hub.h}/executions?resourceId=${share.id}`);
  t.is(audit.json.totalElements, 3, 'create, PUT and PATCH each recorded');
});

test('update is refused while NEW (400 naming the state); a delete during provisioning leaves no listener behind', async (t) => {
  const s = await setup();
  const release = hold('slow');
  const created = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ name: 'slow' }) });
  const patch = await s.hub.call('PATCH', s.sharePath(created.json.id), { body: { ingressPort: 7000 } });
  assertRefused(t, patch, 400, 'invalid_request', 'EH_INVALID_STATE', 'cannot update from state NEW');
  const put = await s.hub.call('PUT', s.sharePath(created.json.id), { body: s.shareBody({ name: 'slow' }) });
  t.is(put.status, 400);

  const deleting = await s.hub.call('DELETE', s.sharePath(created.json.id));
  t.is(deleting.status, 202);
  t.is(deleting.json.status, 'DELETING');
  await waitForStatus(s.hub, s.sharePath(created.json.id), 'DELETED');
  release(); // the provisioning job now creates its listener, finds the share gone and removes it again
  await waitFor(async () => {
    const e = (await s.hub.call('GET', created.headers.get('location')!)).json;
    return e.status === 'SUCCEEDED';
  });
  t.deepEqual(await liveListeners(created.json.id), []);
  t.is((await s.hub.call('GET', s.sharePath(created.json.id))).json.status, 'DELETED');
  const again = await s.hub.call('DELETE', s.sharePath(created.json.id));
  assertRefused(t, again, 400, 'invalid_request', 'EH_INVALID_STATE', 'is DELETED');
});

test('a provider failure moves the share to ERROR with the reason; an update from ERROR retries it', async (t) => {
  const s = await setup();
  const created = await s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody({ name: 'fail-share' }) });
  const failed = await waitForStatus(s.hub, s.sharePath(created.json.id), 'ERROR');
  t.regex(failed.statusMessage, /load balancer refused the listener/);
  const execution = await waitFor(async () => {
    const e = (await s.hub.call('GET', created.headers.get('location')!)).json;
    return e.status === 'FAILED' && e;
  });
  t.regex(execution.error, /simulated: the load balancer refused the listener/);

  const retry = await s.hub.call('PATCH', s.sharePath(created.json.id), { body: { name: 'fixed-share' } });
  t.is(retry.status, 202);
  t.is(retry.json.status, 'NEW');
  const deployed = await waitForStatus(s.hub, s.sharePath(created.json.id), 'DEPLOYED');
  t.is(deployed.statusMessage, '');
});

test('a tunnel targeted by a share cannot be deleted (400); once the share is DELETED it can', async (t) => {
  const s = await setup();
  const share = await deployedShare(s);
  const refused = await s.hub.call('DELETE', `${s.hub.h2}/ipsec-tunnels/${s.tunnelId}`);
  assertRefused(t, refused, 400, 'invalid_request', 'EH_IN_USE', 'still targeted by 1 IPsec share');
  t.is((await s.hub.call('GET', `${s.hub.h2}/ipsec-tunnels/${s.tunnelId}`)).json.status, 'DEPLOYED');

  t.is((await s.hub.call('DELETE', s.sharePath(share.id))).status, 202);
  await waitForStatus(s.hub, s.sharePath(share.id), 'DELETED');
  const deleting = await s.hub.call('DELETE', `${s.hub.h2}/ipsec-tunnels/${s.tunnelId}`);
  t.is(deleting.status, 202);
  t.is(deleting.json.status, 'DELETING');
  await waitForStatus(s.hub, `${s.hub.h2}/ipsec-tunnels/${s.tunnelId}`, 'DELETED');
});

test('a share create and a tunnel delete racing never leave a share on a deleted tunnel', async (t) => {
  const s = await setup();
  const [share, tunnelDelete] = await Promise.all([
    s.hub.call('POST', `${s.hub.h2}/ipsec-shares`, { body: s.shareBody() }),
    s.hub.call('DELETE', `${s.hub.h2}/ipsec-tunnels/${s.tunnelId}`),
  ]);
  // exactly one wins
  t.true((share.status === 202) !== (tunnelDelete.status === 202), `${share.status} ${tunnelDelete.status}`);
  if (share.status !== 202) assertRefused(t, share, 400, 'invalid_request', 'EH_INVALID_STATE', 'is DELETING');
  else assertRefused(t, tunnelDelete, 400, 'invalid_request', 'EH_IN_USE');
});

test("hub isolation: another hub's key is 403, another hub's share id is 404", async (t) => {
  const mine = await setup();
  const theirs = await setup();
  const share = await deployedShare(theirs);
  const r = await mine.hub.call('GET', `${theirs.hub.h2}/ipsec-shares/${share.id}`);
  t.is(r.status, 403);
  for (const [method, body] of [
    ['GET', undefined],
    ['PUT', mine.shareBody()],
    ['PATCH', { name: 'x' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await mine.hub.call(method, mine.sharePath(share.id), { body });
    t.is(res.status, 404, method);
    t.is(res.json.error, 'not_found', method);
  }
  t.is((await mine.hub.call('GET', `${mine.hub.h2}/ipsec-shares`)).json.totalElements, 0);
  t.is((await theirs.hub.call('GET', theirs.sharePath(share.id))).json.status, 'DEPLOYED');
});
