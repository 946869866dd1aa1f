import { X509Certificate } from 'node:crypto';
import test from 'ava';
import pg from 'pg';
import { publishDnsRecords, startDnsServer, type TestDnsServer } from '../../helpers/dnsServer.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';
import { customFrontendRenewal as renewal } from '../../../workers/schedules/customFrontends.js';
import { assertRefused } from '../../helpers/refusals.js';

let dns: TestDnsServer;
test.before(async () => {
  dns = await startDnsServer();
});
const stack = useStack(test, () => ({ env: { HUB_DNS_SERVERS: dns.server, HUB_DNS_CHECK_INTERVAL_MS: '50', HUB_CERTIFICATE_RENEW_BEFORE_DAYS: '120' } }));
test.after.always(async () => {
  await dns?.close();
});

const INGRESS = ['203.0.113.10', '203.0.113.11'];
const cf = (hub: HubFixture, id = '') => `${hub.h}/custom-frontends${id ? `/${id}` : ''}`;

async function authProvider(hub: HubFixture, name: string): Promise<string> {
  const r = await hub.call('POST', `${hub.h}/auth-providers`, { body: { name, type: 'GOOGLE', config: { clientId: 'c', clientSecret: 's' } } });
  return r.json.id;
}

async function waitForStatus(hub: HubFixture, id: string, status: string, what = status) {
  return waitFor(
    async () => {
      const r = await hub.call('GET', cf(hub, id));
      return r.json.status === status && r.json;
    },
    { what },
  );
}

async function databaseRow(id: string) {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    return (await client.query('SELECT * FROM custom_frontends WHERE id = $1', [id])).rows[0];
  } finally {
    await client.end();
  }
}

test.serial('DNS records answer 400 while the custom frontend is NEW', async (t) => {
  await stack.stopWorkers();
  try {
    const hub = await stack.hub();
    const created = await hub.call('POST', cf(hub), { body: { hostname: 'early.example.com' } });
    t.is(created.status, 201);
    t.is(created.json.status, 'NEW');
    const records = await hub.call('GET', `${cf(hub, created.json.id)}/dns-records`);
    assertRefused(t, records, 400, 'invalid_request', 'EH_INVALID_STATE', 'is NEW'); // names the state
  } finally {
    await stack.startWorkers();
  }
});

test.serial('lifecycle: NEW -> PENDING (records) -> ACTIVE only when both records resolve, then usable by shares', async (t) => {
  const hub = await stack.hub();
  const providerA = await authProvider(hub, 'a');
  const created = await hub.call('POST', cf(hub), { body: { hostname: 'Shares.Example.COM', authProviderIds: [providerA] } });
  t.is(created.status, 201, created.text);
  t.like(created.json, { hubId: hub.hubId, status: 'NEW', domainName: 'shares.example.com', authProviderIds: [providerA] });
  const id = created.json.id;

  const pending = await waitForStatus(hub, id, 'PENDING');
  t.like(pending, { id, hostname: 'shares.example.com', frontendId: created.json.frontendId });
  const records = await hub.call('GET', `${cf(hub, id)}/dns-records`);
  t.is(records.status, 200, records.text);
  t.deepEqual(records.json.aRecord, { name: 'shares.example.com', ipAddress: INGRESS });
  t.like(records.json, { hubId: hub.hubId, customFrontendId: id, domainName: 'shares.example.com' });
  t.is(records.json.cnameRecords.length, 1);
  const [cname] = records.json.cnameRecords;
  t.is(cname.name, '_acme-challenge.shares.example.com');
  t.regex(cname.value, /^[a-z0-9]{32}\.validation\.edgehub\.localhost$/);

  // not offered to shares until ACTIVE
  const listed = async () => (await hub.call('GET', `${hub.h}/frontends`)).json.some((f: { id: string }) => f.id === pending.frontendId);
  t.false(await listed());
  const early = await hub.call('POST', `${hub.h}/shares`, { body: { name: 's', frontendIds: [pending.frontendId], target: 'http://10.0.0.1' } });
  t.is(early.status, 400);

  // a wrong A record: checked, still PENDING
  dns.setA('shares.example.com', ['198.51.100.7']);
  const wrong = await waitFor(
    async () => {
      const r = await hub.call('GET', cf(hub, id));
      return r.json.statusMessage?.includes('198.51.100.7') && r.json;
    },
    { what: 'a check that saw the wrong A record' },
  );
  t.is(wrong.status, 'PENDING');

  // the A record alone is not enough
  dns.setA('shares.example.com', [...INGRESS].reverse());
  const aOnly = await waitFor(
    async () => {
      const r = await hub.call('GET', cf(hub, id));
      return r.json.statusMessage && !r.json.statusMessage.includes('A record') && r.json;
    },
    { what: 'a check that saw the right A record' },
  );
  t.is(aOnly.status, 'PENDING');
  t.regex(aOnly.statusMessage, /CNAME/);
  const waiting = await hub.call('GET', `${hub.h}/executions?resourceId=${id}&type=frontends.activateCustomFrontend`);
  t.is(waiting.json.totalElements, 1, 'one execution keeps checking');
  t.true(['QUEUED', 'RUNNING'].includes(waiting.json.content[0].status));

  dns.setCname(cname.name, `${cname.value}.`);
  const active = await waitForStatus(hub, id, 'ACTIVE');
  t.false('statusMessage' in active);
  t.truthy(active.certificateExpiresAt);

  // the certificate: issued by the local CA for the hostname and its share subdomains
  const row = await databaseRow(id);
  const [leafPem, caPem] = row.certificate_pem.split(/(?<=-----END CERTIFICATE-----)\n+/);
  const leaf = new X509Certificate(leafPem);
  const ca = new X509Certificate(caPem);
  t.is(row.certificate_issuer, 'local-ca');
  t.regex(leaf.subjectAltName ?? '', /DNS:shares\.example\.com/);
  t.regex(leaf.subjectAltName ?? '', /DNS:\*\.shares\.example\.com/);
  t.true(leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
  t.true(row.certificate_key_sealed.startsWith('v1.'));

  // listed, usable by shares
  const frontends = await hub.call('GET', '/account/frontends');
  const mine = frontends.json.find((f: { id: string }) => f.id === active.frontendId);
  t.deepEqual(mine, { id: active.frontendId, urlTemplate: 'https://{token}.shares.example.com', publicName: 'shares.example.com' });
  const share = await hub.call('POST', `${hub.h}/shares`, { body: { name: 's', frontendIds: [active.frontendId], target: 'http://10.0.0.1' } });
  t.is(share.status, 201, share.text);
  const done = await hub.call('GET', `${hub.h}/executions?resourceId=${id}&type=frontends.activateCustomFrontend`);
  t.like(done.json.content[0], { status: 'SUCCEEDED', error: null });
  t.true(done.json.content[0].attempts > 1);

  // another hub neither sees nor uses it
  const other = await stack.hub();
  t.false((await other.call('GET', `${other.h}/frontends`)).json.some((f: { id: string }) => f.id === active.frontendId));
  const foreignShare = await other.call('POST', `${other.h}/shares`, { body: { name: 's', frontendIds: [active.frontendId], target: 'http://10.0.0.1' } });
  assertRefused(t, foreignShare, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.frontendIds');
  t.is(share.json.frontendEndpoint, `https://${share.json.zId}.shares.example.com`);

  // PATCH: authProviderIds only
  const providerB = await authProvider(hub, 'b');
  const patched = await hub.call('PATCH', cf(hub, id), { body: { authProviderIds: [providerB, providerA] } });
  t.is(patched.status, 200, patched.text);
  t.like(patched.json, { id, hubId: hub.hubId, status: 'ACTIVE', domainName: 'shares.example.com', authProviderIds: [providerB, providerA] });
  for (const body of [{ hostname: 'other.example.com' }, { authProviderIds: [providerA], status: 'NEW' }, {}]) {
    const refused = await hub.call('PATCH', cf(hub, id), { body });
    assertRefused(t, refused, 400, 'invalid_request', 'EH_INVALID_REQUEST');
  }
  const unknownProvider = await hub.call('PATCH', cf(hub, id), { body: { authProviderIds: ['nope'] } });
  assertRefused(t, unknownProvider, 400, 'invalid_request', 'EH_INVALID_REQUEST', 'nope');
  t.deepEqual((await hub.call('GET', cf(hub, id))).json.authProviderIds, [providerB, providerA], 'a refused PATCH changes nothing');

  // an attached auth provider cannot be deleted
  const attached = await hub.call('DELETE', `${hub.h}/auth-providers/${providerA}`);
  assertRefused(t, attached, 400, 'invalid_request', 'EH_IN_USE', 'custom frontend');

  // a frontend carrying shares cannot be deleted; once they are gone it can, and its hostname is free again
  const busy = await hub.call('DELETE', cf(hub, id));
  assertRefused(t, busy, 400, 'invalid_request', 'EH_IN_USE');
  t.is((await hub.call('DELETE', `${hub.h}/shares/${share.json.zId}`)).status, 204);
  const removed = await hub.call('DELETE', cf(hub, id));
  t.is(removed.status, 204);
  t.is((await hub.call('GET', cf(hub, id))).status, 404);
  t.false((await hub.call('GET', `${hub.h}/frontends`)).json.some((f: { id: string }) => f.id === active.frontendId));
  t.is((await hub.call('DELETE', `${hub.h}/auth-providers/${providerA}`)).status, 204, 'detached with the frontend');
  const again = await hub.call('POST', cf(hub), { body: { hostname: 'shares.example.com' } });
  t.is(again.status, 201);
});

test.serial('the clock renews a certificate that expires within the renewal window; the frontend stays ACTIVE', async (t) => {
  const hub = await stack.hub();
  const { id } = (await hub.call('POST', cf(hub), { body: { hostname: 'renew.example.com' } })).json;
  await publishDnsRecords(dns, hub, id);
  await waitForStatus(hub, id, 'ACTIVE');
  const before = new X509Certificate((await databaseRow(id)).certificate_pem);

  // 90-day local certificates are due within a 120-day window
  await stack.stopWorkers();
  try {
    await renewal.run();
    await renewal.run(); // a second tick while the first renewal is queued adds none
  } finally {
    await stack.startWorkers();
  }
  const renewals = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/executions?resourceId=${id}&type=frontends.renewCertificate`);
      return r.json.content.every((e: { status: string }) => e.status === 'SUCCEEDED') && r.json.totalElements > 0 && r.json;
    },
    { what: 'the renewal' },
  );
  t.is(renewals.totalElements, 1);
  const after = new X509Certificate((await databaseRow(id)).certificate_pem);
  t.not(after.serialNumber, before.serialNumber);
  t.regex(after.subjectAltName ?? '', /DNS:renew\.example\.com/);
  t.is((await hub.call('GET', cf(hub, id))).json.status, 'ACTIVE');
});

test.serial('hostnames are validated and unique across hubs', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  for (const hostname of [
    'localhost',
    'bad_name.example.com',
    '-lead.example.com',
    'a..example.com',
    'x'.repeat(64) + '.example.com',
    '10.0.0.1',
    'http://x.example.com',
  ]) {
    const r = await a.call('POST', cf(a), { body: { hostname } });
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.hostname');
  }
  const missing = await a.call('POST', cf(a), { body: {} });
  assertRefused(t, missing, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.hostname');
  const foreignProvider = await authProvider(b, 'theirs');
  const notMine = await a.call('POST', cf(a), { body: { hostname: 'mine.example.com', authProviderIds: [foreignProvider] } });
  assertRefused(t, notMine, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.authProviderIds'); // another hub's auth provider
  t.is((await a.call('POST', cf(a), { body: { hostname: 'unique.example.net' } })).status, 201);
  const taken = await b.call('POST', cf(b), { body: { hostname: 'UNIQUE.example.net' } });
  t.is(taken.status, 409);
  t.is(taken.json.error, 'conflict');
});

test.serial('hub isolation: another hub gets 404 for every operation, 403 on the foreign path', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const { id } = (await a.call('POST', cf(a), { body: { hostname: 'isolated.example.org' } })).json;
  for (const [method, suffix, body] of [
    ['GET', ''],
    ['GET', '/dns-records'],
    ['PATCH', '', { authProviderIds: [] }],
    ['DELETE', ''],
  ] as const) {
    const r = await b.call(method, cf(b, id) + suffix, { body });
    t.is(r.status, 404, `${method} ${suffix}`);
    t.is(r.json.error, 'not_found');
    const foreign = await b.call(method, cf(a, id) + suffix, { body });
    t.is(foreign.status, 403, `${method} ${suffix} on the foreign path`);
  }
  t.is((await a.call('GET', cf(a, id))).status, 200);
  t.is((await b.call('GET', cf(b))).json.totalElements, 0);
  const listed = await a.call('GET', cf(a));
  t.deepEqual(
    listed.json.content.map((f: { id: string }) => f.id),
    [id],
  );
  t.like(listed.json.content[0], { hostname: 'isolated.example.org', authProviderIds: [] });
});
