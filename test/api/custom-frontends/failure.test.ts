import test from 'ava';
import { PROVISION_JOB } from '../../../domain/commands/customFrontends.js';
import pg from 'pg';
import { processors } from '../../../workers/processors/index.js';
import dnsWait from '../../../workers/schedules/customFrontendDnsWait.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dnsServer.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';

/**
 * A custom frontend whose provisioning spends its attempts, or whose DNS wait ends, becomes
 * ERROR with a message saying why, and its hostname is released so nobody can squat it.
 */

let dns: TestDnsServer;
test.before(async () => {
  dns = await startDnsServer();
});
// failed attempts retried after 100 ms, 200 ms, ... instead of 1 s, 2 s, ...
const stack = useStack(test, () => ({
  workers: false,
  env: { HUB_DNS_SERVERS: dns.server, HUB_DNS_CHECK_INTERVAL_MS: '100', HUB_DNS_WAIT: 'PT5S', HUB_JOB_BACKOFF_MS: '100' },
}));
test.after.always(async () => {
  await dns?.close();
});

const cf = (hub: HubFixture, id = '') => `${hub.h}/custom-frontends${id ? `/${id}` : ''}`;
const statusOf = (hub: HubFixture, id: string, status: string) =>
  waitFor(
    async () => {
      const r = await hub.call('GET', cf(hub, id));
      return r.json.status === status && r.json;
    },
    { what: `custom frontend ${id} ${status}`, timeoutMs: 60_000 },
  );

test.serial('provisioning that spends its attempts leaves the frontend ERROR with the reason, not NEW for ever', async (t) => {
  // the hosting API fails every time
  const real = processors.find((p) => p.type === PROVISION_JOB)!;
  await stack.startWorkers([
    {
      ...real,
      handle: async () => {
        throw new Error('ingress API answered 503');
      },
    },
  ]);
  try {
    const hub = await stack.hub();
    const created = await hub.call('POST', cf(hub), { body: { hostname: 'broken-hosting.example.com' } });
    t.is(created.status, 201, created.text);
    const failed = await statusOf(hub, created.json.id, 'ERROR');
    t.regex(failed.statusMessage, /hosting infrastructure could not be created: ingress API answered 503/);
    t.regex(failed.statusMessage, /hostname is released/);
    const [execution] = (await hub.call('GET', `${hub.h}/executions?resourceId=${created.json.id}`)).json.content;
    t.like(execution, { status: 'FAILED', type: PROVISION_JOB });
    const records = await hub.call('GET', `${cf(hub, created.json.id)}/dns-records`);
    t.is(records.status, 400, 'no records for a frontend without infrastructure');
    t.true((await hub.call('DELETE', cf(hub, created.json.id))).status < 300, 'an ERROR frontend can be deleted');
  } finally {
    await stack.stopWorkers();
  }
});

test.serial('a hostname waiting for DNS is released when the wait ends; another hub can then claim it', async (t) => {
  await stack.startWorkers();
  try {
    const squatter = await stack.hub();
    const created = await squatter.call('POST', cf(squatter), { body: { hostname: 'squatted.example.com' } });
    t.is(created.status, 201, created.text);
    const owner = await stack.hub();
    const refused = await owner.call('POST', cf(owner), { body: { hostname: 'squatted.example.com' } });
    t.is(refused.status, 409, 'claimed while NEW or PENDING');

    const pending = await waitFor(
      async () => {
        const r = await squatter.call('GET', cf(squatter, created.json.id));
        return r.json.statusMessage && r.json;
      },
      { what: 'the first DNS check' },
    );
    t.is(pending.status, 'PENDING');
    t.regex(
      pending.statusMessage,
      /^waiting for DNS records \(checked every 100 ms until \S+Z\): A record of squatted\.example\.com resolves to \[\], expected \[/,
    );
    // nobody publishes the records: the DNS wait (HUB_DNS_WAIT, here 5 s) ends
    const failed = await statusOf(squatter, created.json.id, 'ERROR');
    t.regex(failed.statusMessage, /DNS records were not in place when the DNS wait ended at /);
    t.regex(failed.statusMessage, /A record of squatted\.example\.com/);
    t.regex(failed.statusMessage, /hostname is released/);
    // a PATCH does not start a new wait
    const patched = await squatter.call('PATCH', cf(squatter, created.json.id), { body: { authProviderIds: [] } });
    t.is(patched.status, 200);
    t.is(patched.json.status, 'ERROR');

    const claimed = await owner.call('POST', cf(owner), { body: { hostname: 'squatted.example.com' } });
    t.is(claimed.status, 201, claimed.text);
    t.is(claimed.json.status, 'NEW');
    const second = await stack.hub();
    t.is((await second.call('POST', cf(second), { body: { hostname: 'squatted.example.com' } })).status, 409, 'the new claim holds');
  } finally {
    await stack.stopWorkers();
  }
});

test.serial('a frontend left PENDING with no check under way (a check that gave up before ERROR existed) is released by the clock', async (t) => {
  await stack.startWorkers();
  const hub = await stack.hub();
  const created = await hub.call('POST', cf(hub), { body: { hostname: 'legacy-pending.example.com' } });
  t.is(created.status, 201);
  await statusOf(hub, created.json.id, 'PENDING');
  await stack.stopWorkers();
  // what an older release left behind: the 72 h check FAILED, the frontend still PENDING and holding its name
  const sql = new pg.Client({ connectionString: stack.databaseUrl });
  await sql.connect();
  try {
    await sql.query(`UPDATE executions SET status = 'FAILED', finished_at = now() WHERE resource_id = $1 AND status IN ('QUEUED', 'RUNNING')`, [
      created.json.id,
    ]);
    await sql.query(`UPDATE custom_frontends SET dns_wait_until = now() - interval '2 minutes' WHERE id = $1`, [created.json.id]);
  } finally {
    await sql.end();
  }
  const other = await stack.hub();
  t.is((await other.call('POST', cf(other), { body: { hostname: 'legacy-pending.example.com' } })).status, 409, 'still held');
  await dnsWait.run();
  const released = (await hub.call('GET', cf(hub, created.json.id))).json;
  t.is(released.status, 'ERROR');
  t.regex(released.statusMessage, /the DNS wait ended at \S+Z with no DNS check under way; the hostname is released/);
  t.is((await other.call('POST', cf(other), { body: { hostname: 'legacy-pending.example.com' } })).status, 201);
});
