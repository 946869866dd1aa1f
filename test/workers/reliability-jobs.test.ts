import test from 'ava';
import pg from 'pg';
import { sweepExecutions } from '../../domain/jobs/enqueue.js';
import { queue } from '../../domain/jobs/queues.js';
import { reconcileExecutions } from '../../workers/reconcile.js';
import { processors } from '../../workers/processors/index.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dnsServer.js';
import { stopDatabase } from '../helpers/outage.js';
import { type Stack, useStack, waitFor } from '../helpers/stack.js';

/**
 * What the clock's sweep does with executions whose job is lost, failed or finished while
 * PostgreSQL could not record it.
 */

let dns: TestDnsServer;
let sql: pg.Client;
test.before(async () => {
  dns = await startDnsServer();
});
// failed attempts retried after 100 ms, 200 ms, ... instead of 1 s, 2 s, ...
const stack = useStack(test, () => ({ workers: false, env: { HUB_DNS_SERVERS: dns.server, HUB_DNS_CHECK_INTERVAL_MS: '30000', HUB_JOB_BACKOFF_MS: '100' } }));
stack.onStop(async () => {
  await sql?.end().catch(() => undefined);
});
test.before(async () => {
  sql = await connect();
});
test.after.always(async () => {
  await dns?.close();
});

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  client.on('error', () => undefined); // cut by the outage on purpose
  await client.connect();
  return client;
}

const executionsOf = async (hubCall: Stack['call'], h: string, resourceId: string) =>
  (await hubCall('GET', `${h}/executions?resourceId=${resourceId}&sort=createdAt,asc`)).json.content as {
    id: string;
    type: string;
    status: string;
    error?: string;
  }[];

test.serial('a lost job comes back with the options it was added with (a DNS wait keeps its many spaced attempts)', async (t) => {
  await stack.startWorkers();
  const hub = await stack.hub();
  const created = await hub.call('POST', `${hub.h}/custom-frontends`, { body: { hostname: 'lost-job.example.com' } });
  t.is(created.status, 201, created.text);
  const activation = await waitFor(
    async () => (await executionsOf(hub.call, hub.h, created.json.id)).find((e) => e.type === 'frontends.activateCustomFrontend'),
    {
      what: 'the DNS activation execution',
    },
  );
  const original = await waitFor(() => queue('frontends').getJob(activation.id), { what: 'its job' });
  t.true(original.opts.attempts! > 1000, 'a 72 h wait checked every 30 s');
  t.deepEqual(original.opts.backoff, { type: 'fixed', delay: 30000 });
  await stack.stopWorkers();

  // Redis loses the job (a restart without persistence, a flush): the execution still waits in PostgreSQL
  await original.remove();
  await sql.query(`UPDATE executions SET created_at = now() - interval '1 minute' WHERE id = $1`, [activation.id]);
  const outcome = await reconcileExecutions(processors);
  t.is(outcome.readded, 1);
  const readded = await queue('frontends').getJob(activation.id);
  t.truthy(readded);
  t.is(readded!.opts.attempts, original.opts.attempts, 'same attempts, not the default five');
  t.deepEqual(readded!.opts.backoff, original.opts.backoff, 'same spacing, not the default exponential one');
  await readded!.remove();
  await sql.query(`UPDATE executions SET status = 'FAILED', finished_at = now() WHERE id = $1`, [activation.id]);
});

test.serial("PostgreSQL away at a job's last attempt: once it is back the execution is FAILED and the tunnel ERROR, not NEW for ever", async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: { name: 'stranded', peerPublicIp: '203.0.113.78', peerCidr: '10.8.0.0/16' } });
  t.is(created.status, 202, created.text);
  const tunnelId: string = created.json.id;
  const [execution] = await executionsOf(hub.call, hub.h, tunnelId);

  // the worker is up, then PostgreSQL goes away: every attempt of the job fails, the last one cannot be recorded
  await queue('ipsec').pause();
  await stack.startWorkers();
  const outage = await stopDatabase(stack.databaseUrl);
  try {
    await queue('ipsec').resume();
    await waitFor(async () => (await (await queue('ipsec').getJob(execution.id))?.getState()) === 'failed', {
      timeoutMs: 60_000,
      what: 'the job to spend its attempts',
    });
  } finally {
    await outage.end();
  }
  await stack.stopWorkers();
  await sql.end().catch(() => undefined);
  sql = await connect();

  // PostgreSQL is back: the tunnel is stranded in NEW with an unfinished execution, and the plain sweeper skips it
  const stranded = await waitFor(async () => (await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnelId}`).catch(() => undefined))?.json, {
    what: 'the API to answer again',
  });
  t.is(stranded.status, 'NEW');
  t.true(['QUEUED', 'RUNNING'].includes((await hub.call('GET', `${hub.h}/executions/${execution.id}`)).json.status));
  await sql.query(`UPDATE executions SET created_at = now() - interval '1 minute' WHERE id = $1`, [execution.id]);
  t.is(await sweepExecutions(0), 0, 'the job exists (failed): nothing to re-add');

  // the reconciliation finishes it with the job's error and runs the tunnel's failure handler
  await new Promise((r) => setTimeout(r, 5_100)); // the worker's own grace period for a finished job
  const outcome = await reconcileExecutions(processors);
  t.true(outcome.failed >= 1, "the tunnel job (the new hub's CA job may have failed in the outage too)");
  const finished = (await hub.call('GET', `${hub.h}/executions/${execution.id}`)).json;
  t.is(finished.status, 'FAILED');
  t.regex(finished.error, /connect|database|terminat|allow/i, finished.error);
  const tunnel = (await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnelId}`)).json;
  t.is(tunnel.status, 'ERROR');
  t.is((await reconcileExecutions(processors)).failed, 0, 'once');
});
