import test from 'ava';
import { deployedTunnel, executionOf, tunnelBody, useTestIpsecProvider, waitForStatus } from '../../helpers/ipsec.js';
import { useStack, waitFor } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

// the provider first: its gates are released before the stack stops (a held job would keep the worker waiting)
const provider = useTestIpsecProvider(test);
const stack = useStack(test);
const hold = (key: string) => provider.hold(key);
test('create answers 202 at NEW with empty provisioned fields, then the execution deploys it', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ locationId: 'eu-west' }) });
  t.is(created.status, 202);
  t.like(created.json, {
    name: 'office',
    hubId: hub.hubId,
    locationId: 'eu-west',
    status: 'NEW',
    peerPublicIp: '203.0.113.10',
    peerCidr: '192.168.10.0/24',
    nlbDnsName: '',
    vpnConnectionId: '',
    nlbPrivateIp: '',
  });
  t.is(typeof created.json.id, 'string');
  const location = created.headers.get('location');
  t.regex(location ?? '', new RegExp(`^/hub/${hub.hubId}/executions/[0-9a-f-]{36}$`));

  const deployed = await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${created.json.id}`, 'DEPLOYED');
  t.regex(deployed.nlbPrivateIp, /^10\.100\.\d{1,3}\.\d{1,3}$/);
  t.regex(deployed.vpnConnectionId, /^vpn-[0-9a-f]{17}$/);
  t.regex(deployed.nlbDnsName, /^[a-z0-9.-]+$/);
  t.truthy(deployed.nlbDnsName);
  // the same tunnel answers under /hub/{hubId} too
  t.is((await hub.call('GET', `${hub.h}/ipsec-tunnels/${created.json.id}`)).json.status, 'DEPLOYED');

  const execution = await executionOf(hub, location);
  t.like(execution, { status: 'SUCCEEDED', type: 'ipsec.provisionTunnel', resourceType: 'ipsecTunnel', resourceId: created.json.id });
  const audit = await hub.call('GET', `${hub.h}/executions?resourceId=${created.json.id}`);
  t.is(audit.json.totalElements, 1, 'one execution records the provisioning');
});

test('one tunnel per hub and location, also under concurrent creates; a DELETED tunnel frees its location', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const first = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody() });
  t.is(first.status, 202);
  const again = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'second' }) });
  assertRefused(t, again, 409, 'conflict', 'EH_TUNNEL_EXISTS', 'without a location');
  t.is((await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ locationId: 'us-east' }) })).status, 202);

  const racers = await Promise.all(
    Array.from({ length: 6 }, (_, i) => hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: `racer-${i}`, locationId: 'race' }) })),
  );
  t.deepEqual(racers.map((r) => r.status).sort(), [202, 409, 409, 409, 409, 409]);
  for (const r of racers.filter((x) => x.status === 409)) assertRefused(t, r, 409, 'conflict', 'EH_TUNNEL_EXISTS', "at location 'race'");

  // another hub may use the same location
  const other = await stack.hub({ ipsec: true });
  t.is((await other.call('POST', `${other.h2}/ipsec-tunnels`, { body: tunnelBody({ locationId: 'race' }) })).status, 202);

  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${first.json.id}`, 'DEPLOYED');
  t.is((await hub.call('DELETE', `${hub.h2}/ipsec-tunnels/${first.json.id}`)).status, 202);
  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${first.json.id}`, 'DELETED');
  t.is((await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'replacement' }) })).status, 202);
});

test('a pinned nlbPrivateIp is honoured and refused to anyone else while the tunnel lives', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const tunnel = await deployedTunnel(hub, { nlbPrivateIp: '10.100.77.7' });
  t.is(tunnel.nlbPrivateIp, '10.100.77.7');
  const other = await stack.hub({ ipsec: true });
  const taken = await other.call('POST', `${other.h2}/ipsec-tunnels`, { body: tunnelBody({ nlbPrivateIp: '10.100.77.7' }) });
  assertRefused(t, taken, 409, 'conflict', 'EH_ADDRESS_IN_USE', '10.100.77.7');
  // free addresses never collide with it
  const free = await deployedTunnel(other, { locationId: 'x' });
  t.not(free.nlbPrivateIp, '10.100.77.7');
  const live = await stack.sql.query('SELECT count(*)::int AS n, count(DISTINCT nlb_private_ip)::int AS d FROM ipsec_local_tunnels WHERE released_at IS NULL');
  t.is(live.rows[0].n, live.rows[0].d, 'live load balancer addresses are distinct');

  t.is((await hub.call('DELETE', `${hub.h2}/ipsec-tunnels/${tunnel.id}`)).status, 202);
  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${tunnel.id}`, 'DELETED');
  const reused = await deployedTunnel(other, { nlbPrivateIp: '10.100.77.7', locationId: 'y' });
  t.is(reused.nlbPrivateIp, '10.100.77.7', 'released with its tunnel');
});

test('the provider refuses a pinned address another load balancer already holds: ERROR with the reason', async (t) => {
  // an address taken in the VPC outside any tunnel row (as another system's load balancer would be)
  await stack.sql.query(`INSERT INTO ipsec_local_tunnels (tunnel_id, nlb_private_ip, nlb_dns_name) VALUES ('foreign-lb', '10.100.99.99', 'foreign.elb')`);
  const hub = await stack.hub({ ipsec: true });
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ nlbPrivateIp: '10.100.99.99' }) });
  t.is(created.status, 202, 'no tunnel holds it, so the API accepts');
  const failed = await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${created.json.id}`, 'ERROR');
  t.regex(failed.statusMessage, /nlbPrivateIp 10\.100\.99\.99 is already allocated/);
  const execution = await executionOf(hub, created.headers.get('location'));
  t.is(execution.status, 'FAILED');
  t.regex(execution.error, /already allocated/);
  const mine = await stack.sql.query('SELECT count(*)::int AS n FROM ipsec_local_tunnels WHERE tunnel_id = $1', [created.json.id]);
  t.is(mine.rows[0].n, 0, 'nothing allocated for the refused tunnel');
});

test('delete: 400 naming NEW and DELETING, 202 DELETING from DEPLOYED, then DELETED (kept, listed only on request)', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const release = hold('held-delete');
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'held-delete' }) });
  const fromNew = await hub.call('DELETE', `${hub.h2}/ipsec-tunnels/${created.json.id}`);
  // state-machine refusals name the state
  assertRefused(t, fromNew, 400, 'invalid_request', 'EH_INVALID_STATE', 'is NEW; cannot delete from state NEW');
  release();
  const path = `${hub.h2}/ipsec-tunnels/${created.json.id}`;
  await waitForStatus(hub, path, 'DEPLOYED');

  const releaseTeardown = hold(`teardown:${created.json.id}`);
  const deleting = await hub.call('DELETE', path);
  t.is(deleting.status, 202);
  t.is(deleting.json.status, 'DELETING');
  t.regex(deleting.headers.get('location') ?? '', /\/executions\//);
  const twice = await hub.call('DELETE', path);
  assertRefused(t, twice, 400, 'invalid_request', 'EH_INVALID_STATE', 'is DELETING');
  releaseTeardown();
  const deleted = await waitForStatus(hub, path, 'DELETED');
  t.is(deleted.id, created.json.id);
  const thrice = await hub.call('DELETE', path);
  assertRefused(t, thrice, 400, 'invalid_request', 'EH_INVALID_STATE', 'is DELETED');

  t.is((await hub.call('GET', `${hub.h2}/ipsec-tunnels`)).json.totalElements, 0, 'DELETED is left out of the default list');
  const listed = await hub.call('GET', `${hub.h2}/ipsec-tunnels?status=DELETED`);
  t.deepEqual(
    listed.json.content.map((x: { id: string }) => x.id),
    [created.json.id],
  );
  const released = await stack.sql.query('SELECT released_at FROM ipsec_local_tunnels WHERE tunnel_id = $1', [created.json.id]);
  t.truthy(released.rows[0].released_at, 'the provider released the allocation');
  const audit = await hub.call('GET', `${hub.h}/executions?resourceId=${created.json.id}&sort=createdAt,asc`);
  t.deepEqual(
    audit.json.content.map((e: { type: string; status: string }) => `${e.type}:${e.status}`),
    ['ipsec.provisionTunnel:SUCCEEDED', 'ipsec.teardownTunnel:SUCCEEDED'],
  );
});

test('a provider failure moves the tunnel to ERROR and the execution says why; ERROR can be deleted', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'fail-quota' }) });
  t.is(created.status, 202);
  const failed = await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${created.json.id}`, 'ERROR');
  t.regex(failed.statusMessage, /quota of the account is exhausted/);
  t.is(failed.vpnConnectionId, '');
  const execution = await waitFor(async () => {
    const e = await executionOf(hub, created.headers.get('location'));
    return e.status === 'FAILED' && e;
  });
  t.regex(execution.error, /simulated: the VPN connection quota of the account is exhausted/);
  t.is(execution.attempts, 1, 'a permanent refusal is not retried');

  const config = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${created.json.id}/tunnel-config`);
  assertRefused(t, config, 400, 'invalid_request', 'EH_INVALID_STATE', 'is ERROR');
  t.is((await hub.call('DELETE', `${hub.h2}/ipsec-tunnels/${created.json.id}`)).status, 202);
  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${created.json.id}`, 'DELETED');
});

test('a transient provider failure is retried and the tunnel still deploys once', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'flaky-network' }) });
  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${created.json.id}`, 'DEPLOYED');
  const execution = await waitFor(async () => {
    const e = await executionOf(hub, created.headers.get('location'));
    return e.status === 'SUCCEEDED' && e;
  });
  t.is(execution.attempts, 2);
  const rows = await stack.sql.query('SELECT count(*)::int AS n FROM ipsec_local_tunnels WHERE tunnel_id = $1', [created.json.id]);
  t.is(rows.rows[0].n, 1);
});
