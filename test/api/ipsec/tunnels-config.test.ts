import test from 'ava';
import { RESERVED_INSIDE_CIDRS } from '../../../shared/providers/ipsecLocal.js';
import { deployedTunnel, tunnelBody, useTestIpsecProvider, waitForStatus } from '../../helpers/ipsec.js';
import { useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

// the provider first: its gates are released before the stack stops (a held job would keep the worker waiting)
const provider = useTestIpsecProvider(test);
const stack = useStack(test);
const hold = (key: string) => provider.hold(key);
test('hubs without the IPsec feature are refused on every IPsec route with 403 not_found', async (t) => {
  const hub = await stack.hub({ ipsec: false });
  const id = '00000000-0000-0000-0000-000000000000';
  const routes: [string, string][] = [
    ['GET', '/ipsec-tunnels'],
    ['POST', '/ipsec-tunnels'],
    ['GET', `/ipsec-tunnels/${id}`],
    ['DELETE', `/ipsec-tunnels/${id}`],
    ['GET', `/ipsec-tunnels/${id}/tunnel-config`],
    ['GET', `/ipsec-tunnels/${id}/sample-config`],
    ['GET', '/ipsec-shares'],
    ['POST', '/ipsec-shares'],
    ['GET', `/ipsec-shares/${id}`],
    ['PUT', `/ipsec-shares/${id}`],
    ['PATCH', `/ipsec-shares/${id}`],
    ['DELETE', `/ipsec-shares/${id}`],
  ];
  for (const prefix of [hub.h2, hub.h]) {
    for (const [method, path] of routes) {
      const r = await hub.call(method, prefix + path, { body: method === 'POST' || method === 'PUT' || method === 'PATCH' ? tunnelBody() : undefined });
      t.is(r.status, 403, `${method} ${path}`);
      t.deepEqual(r.json, { error: 'not_found', message: 'IPsec is not enabled for this hub' }, `${method} ${path}`);
    }
  }
  // enabling the feature opens the routes
  const patched = await stack.call('PATCH', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin, body: { features: { ipsec: true } } });
  t.is(patched.status, 200);
  t.is((await hub.call('GET', `${hub.h2}/ipsec-tunnels`)).status, 200);
});

test('tunnel-config has the documented shape, AWS defaults, a /30 inside CIDR and no pre-shared key', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const release = hold('held-config');
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'held-config' }) });
  const early = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${created.json.id}/tunnel-config`);
  assertRefused(t, early, 400, 'invalid_request', 'EH_INVALID_STATE', 'is NEW'); // names the state
  release();
  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${created.json.id}`, 'DEPLOYED');

  const r = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${created.json.id}/tunnel-config`);
  t.is(r.status, 200);
  t.deepEqual(Object.keys(r.json).sort(), ['state', 'tunnels']);
  t.is(r.json.state, 'available');
  t.is(r.json.tunnels.length, 1);
  const [tunnel] = r.json.tunnels;
  t.deepEqual(Object.keys(tunnel).sort(), [
    'dpdTimeoutAction',
    'dpdTimeoutSeconds',
    'ikeVersions',
    'insideCidr',
    'outsideIpAddress',
    'phase1DHGroupNumbers',
    'phase1EncryptionAlgorithms',
    'phase1IntegrityAlgorithms',
    'phase1LifetimeSeconds',
    'phase2DHGroupNumbers',
    'phase2EncryptionAlgorithms',
    'phase2IntegrityAlgorithms',
    'phase2LifetimeSeconds',
    'rekeyFuzzPercentage',
    'rekeyMarginTimeSeconds',
    'status',
    'statusMessage',
  ]);
  t.like(tunnel, {
    ikeVersions: ['ikev1', 'ikev2'],
    phase1LifetimeSeconds: 28800,
    phase2LifetimeSeconds: 3600,
    rekeyMarginTimeSeconds: 270,
    rekeyFuzzPercentage: 100,
    dpdTimeoutSeconds: 30,
    dpdTimeoutAction: 'clear',
  });
  t.deepEqual(tunnel.phase1DHGroupNumbers, [2, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
  t.deepEqual(tunnel.phase2DHGroupNumbers, [2, 5, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
  t.true(tunnel.phase1EncryptionAlgorithms.includes('AES256'));
  t.true(tunnel.phase2IntegrityAlgorithms.includes('SHA2-256'));
  t.regex(tunnel.outsideIpAddress, /^\d+\.\d+\.\d+\.\d+$/);
  t.regex(tunnel.insideCidr, /^169\.254\.\d+\.\d+\/30$/);
  t.is(Number(tunnel.insideCidr.split('/')[0].split('.')[3]) % 4, 0, 'a /30 starts on a multiple of 4');
  t.false(RESERVED_INSIDE_CIDRS.includes(tunnel.insideCidr));
  t.is(typeof tunnel.status, 'string');

  // the pre-shared key appears only in the sample configuration
  const sample = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${created.json.id}/sample-config`, { headers: { accept: 'text/plain' } });
  const psk = /secret = "([^"]+)"/.exec(sample.text)?.[1] ?? '';
  t.regex(psk, /^[A-Za-z1-9._][A-Za-z0-9._]{7,63}$/);
  t.false(r.text.includes(psk));
  t.false((await hub.call('GET', `${hub.h2}/ipsec-tunnels/${created.json.id}`)).text.includes(psk));
  t.false((await hub.call('GET', `${hub.h2}/ipsec-tunnels`)).text.includes(psk));
  t.false((await hub.call('GET', `${hub.h}/executions?resourceId=${created.json.id}`)).text.includes(psk));
  // and it is stored encrypted
  const stored = await stack.sql.query('SELECT pre_shared_key_sealed FROM ipsec_tunnels WHERE id = $1', [created.json.id]);
  t.truthy(stored.rows[0].pre_shared_key_sealed);
  t.false(stored.rows[0].pre_shared_key_sealed.includes(psk));
  const all = await stack.sql.query('SELECT row_to_json(l)::text AS row FROM ipsec_local_tunnels l');
  t.false(all.rows.some((row) => row.row.includes(psk)));
});

test('sample-config is a strongSwan configuration in text/plain carrying the tunnel values', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const tunnel = await deployedTunnel(hub, { peerPublicIp: '198.51.100.20', peerCidr: '172.20.0.0/16' });
  const config = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.id}/tunnel-config`);
  const r = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.id}/sample-config`, { headers: { accept: 'text/plain' } });
  t.is(r.status, 200);
  t.regex(r.headers.get('content-type') ?? '', /^text\/plain/);
  t.regex(r.text, /connections \{/);
  t.regex(r.text, /secrets \{/);
  t.true(r.text.includes('local_addrs = 198.51.100.20'));
  t.true(r.text.includes(`remote_addrs = ${config.json.tunnels[0].outsideIpAddress}`));
  t.true(r.text.includes('local_ts = 172.20.0.0/16'));
  t.true(r.text.includes('remote_ts = 10.100.0.0/16'));
  t.regex(r.text, /proposals = aes128-aes256-sha1-sha256-sha384-sha512-modp1024-modp2048/);
  t.true(r.text.includes(tunnel.vpnConnectionId));
  t.regex(r.text, /secret = "[A-Za-z0-9._]{8,64}"/);

  const psk = /secret = "([^"]+)"/.exec(r.text)![1];
  const generic = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.id}/sample-config?vendor=generic`, { headers: { accept: 'text/plain' } });
  t.is(generic.status, 200);
  t.true(generic.text.includes(`Pre-shared key            : ${psk}`), 'the same key in every vendor form');
  t.true(generic.text.includes(config.json.tunnels[0].insideCidr));
  const unknownVendor = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.id}/sample-config?vendor=cisco`, { headers: { accept: 'text/plain' } });
  assertRefused(t, unknownVendor, 400, 'invalid_request', 'EH_INVALID_REQUEST', ["'vendor'", 'strongswan, generic']);

  const json = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnel.id}/sample-config`, { headers: { accept: 'application/json' } });
  assertRefused(t, json, 406, 'not_acceptable', 'EH_NOT_ACCEPTABLE');

  const release = hold('held-sample');
  const fresh = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'held-sample', locationId: 'other' }) });
  const early = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${fresh.json.id}/sample-config`, { headers: { accept: 'text/plain' } });
  assertRefused(t, early, 400, 'invalid_request', 'EH_INVALID_STATE', 'is NEW');
  release();
});

test('validation: name, peerPublicIp, peerCidr and nlbPrivateIp are checked and nothing is written', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ name: undefined }, /'\$\.name' is required/],
    [{ name: '' }, /\$\.name/],
    [{ name: 42 }, /'\$\.name'.*string/],
    [{ peerPublicIp: undefined }, /'\$\.peerPublicIp' is required/],
    [{ peerPublicIp: 'not-an-ip' }, /\$\.peerPublicIp.*IPv4/],
    [{ peerPublicIp: '203.0.113.256' }, /\$\.peerPublicIp/],
    [{ peerPublicIp: '203.0.113.010' }, /\$\.peerPublicIp/],
    [{ peerPublicIp: '10.1.2.3' }, /\$\.peerPublicIp.*private/],
    [{ peerPublicIp: '172.16.5.4' }, /private/],
    [{ peerPublicIp: '172.31.255.255' }, /private/],
    [{ peerPublicIp: '192.168.1.1' }, /private/],
    [{ peerPublicIp: '100.64.0.1' }, /shared/],
    [{ peerPublicIp: '100.127.255.254' }, /shared/],
    [{ peerPublicIp: '127.0.0.1' }, /loopback/],
    [{ peerPublicIp: '169.254.10.10' }, /link-local/],
    [{ peerPublicIp: '224.0.0.1' }, /multicast/],
    [{ peerPublicIp: '239.255.255.250' }, /multicast/],
    [{ peerPublicIp: '255.255.255.255' }, /broadcast/],
    [{ peerPublicIp: '0.1.2.3' }, /this network/],
    [{ peerPublicIp: '2001:db8::1' }, /IPv4/],
    [{ peerCidr: undefined }, /'\$\.peerCidr' is required/],
    [{ peerCidr: '10.0.0.0' }, /\$\.peerCidr/],
    [{ peerCidr: '10.0.0.0/33' }, /\$\.peerCidr/],
    [{ peerCidr: '10.0.0.1/24' }, /network address.*10\.0\.0\.0\/24/],
    [{ peerCidr: 'a.b.c.d/8' }, /\$\.peerCidr/],
    [{ nlbPrivateIp: '10.200.0.5' }, /\$\.nlbPrivateIp.*inside the VPC CIDR 10\.100\.0\.0\/16/],
    [{ nlbPrivateIp: '10.100.0.2' }, /\$\.nlbPrivateIp.*reserved/],
    [{ nlbPrivateIp: '10.100.255.255' }, /\$\.nlbPrivateIp.*reserved/],
    [{ nlbPrivateIp: 'nope' }, /\$\.nlbPrivateIp/],
  ];
  for (const [over, message] of bad) {
    const r = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody(over) });
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST');
    t.regex(r.json?.message ?? '', message, `${JSON.stringify(over)}: names the property and why the address is refused (the point of this test)`);
  }
  const notJson = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { raw: '{"name":', headers: { 'content-type': 'application/json' } });
  assertRefused(t, notJson, 400, 'invalid_request', 'EH_MALFORMED_JSON');
  t.is((await hub.call('GET', `${hub.h2}/ipsec-tunnels?status=NEW&status=DEPLOYED&status=ERROR&status=DELETED`)).json.totalElements, 0, 'nothing written');
  t.is((await hub.call('GET', `${hub.h}/executions?resourceType=ipsecTunnel`)).json.totalElements, 0, 'no execution either');

  // public addresses, including the documentation ranges, are accepted
  for (const [i, ip] of ['192.0.2.1', '198.51.100.7', '203.0.113.9', '8.8.8.8', '100.128.0.1', '172.32.0.1'].entries()) {
    const r = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ peerPublicIp: ip, locationId: `loc-${i}`, peerCidr: '0.0.0.0/0' }) });
    t.is(r.status, 202, ip);
  }
});

test('list: paging, sorting, repeatable filters on any property; bad parameters are 400', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const a = await deployedTunnel(hub, { name: 'bravo', locationId: 'l1', peerPublicIp: '198.51.100.1' });
  const b = await deployedTunnel(hub, { name: 'alpha', locationId: 'l2' });
  const c = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody({ name: 'fail-charlie', locationId: 'l3' }) });
  await waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${c.json.id}`, 'ERROR');
  const list = (q: string) => hub.call('GET', `${hub.h2}/ipsec-tunnels${q}`);
  const ids = (r: { json: { content: { id: string }[] } }) => r.json.content.map((x) => x.id);

  const page = await list('?size=2&page=0&sort=name,asc');
  t.is(page.status, 200);
  t.deepEqual(page.json.pageable, { pageNumber: 0, pageSize: 2 });
  t.is(page.json.totalElements, 3);
  t.is(page.json.totalPages, 2);
  t.deepEqual(ids(page), [b.id, a.id]);
  t.deepEqual(ids(await list('?size=2&page=1&sort=name,asc')), [c.json.id]);
  t.deepEqual(ids(await list('?sort=name,desc')), [c.json.id, a.id, b.id]);

  t.deepEqual(ids(await list('?status=ERROR')), [c.json.id]);
  t.deepEqual(ids(await list('?status=DEPLOYED&status=ERROR&sort=name')).length, 3);
  t.deepEqual(ids(await list('?name=bravo')), [a.id]);
  t.deepEqual(ids(await list('?name=bravo&name=alpha&sort=name')), [b.id, a.id]);
  t.deepEqual(ids(await list('?peerPublicIp=198.51.100.1')), [a.id]);
  t.deepEqual(ids(await list(`?vpnConnectionId=${b.vpnConnectionId}`)), [b.id]);
  t.deepEqual(ids(await list(`?nlbPrivateIp=${a.nlbPrivateIp}`)), [a.id]);
  t.deepEqual(ids(await list('?locationId=l3')), [c.json.id]);
  t.deepEqual(ids(await list('?status=DEPLOYED&locationId=l1')), [a.id]);
  t.is(ids(await list(`?hubId=${hub.hubId}`)).length, 3);
  t.deepEqual(ids(await list('?hubId=some-other-hub')), [], 'a hubId filter never reaches past the hub');

  for (const q of ['?colour=red', '?status=BROKEN', '?sort=colour', '?sort=name,sideways', '?size=0', '?page=-1']) {
    const r = await list(q);
    t.is(r.status, 400, q);
    t.is(r.json.error, 'invalid_request', q);
  }
});

test("hub isolation: another hub's key is 403, another hub's tunnel id is 404", async (t) => {
  const mine = await stack.hub({ ipsec: true });
  const theirs = await stack.hub({ ipsec: true });
  const tunnel = await deployedTunnel(theirs);
  for (const path of ['/ipsec-tunnels', `/ipsec-tunnels/${tunnel.id}`, `/ipsec-tunnels/${tunnel.id}/tunnel-config`]) {
    const r = await mine.call('GET', theirs.h2 + path);
    t.is(r.status, 403, path);
    t.is(r.json.error, 'not_found');
  }
  for (const [method, path] of [
    ['GET', `/ipsec-tunnels/${tunnel.id}`],
    ['DELETE', `/ipsec-tunnels/${tunnel.id}`],
    ['GET', `/ipsec-tunnels/${tunnel.id}/tunnel-config`],
    ['GET', `/ipsec-tunnels/${tunnel.id}/sample-config`],
  ]) {
    const r = await mine.call(method, mine.h2 + path, { headers: { accept: 'text/plain, application/json' } });
    t.is(r.status, 404, `${method} ${path}`);
    t.is(r.json.error, 'not_found');
  }
  t.is((await mine.call('GET', `${mine.h2}/ipsec-tunnels`)).json.totalElements, 0);
  t.is((await theirs.call('GET', `${theirs.h2}/ipsec-tunnels/${tunnel.id}`)).json.status, 'DEPLOYED', 'untouched');
  const unauthenticated = await stack.call('GET', `${mine.h2}/ipsec-tunnels`);
  t.is(unauthenticated.status, 401);
});
