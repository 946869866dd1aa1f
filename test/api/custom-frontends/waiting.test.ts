import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import test from 'ava';
import pg from 'pg';
import { startDnsServer, type TestDnsServer } from '../../helpers/dnsServer.js';
import { useStack, waitFor } from '../../helpers/stack.js';
import { scriptArgs } from '../../helpers/script.js';

/**
 * A custom frontend waiting for its DNS records logs its first miss and then keeps quiet (debug
 * level) instead of a WARN line at every check for up to 72 h; the resource's status message says what it waits for.
 */

let dns: TestDnsServer;
let worker: ChildProcess | undefined;
test.before(async () => {
  dns = await startDnsServer();
});
const stack = useStack(test, () => ({ workers: false, env: { HUB_DNS_SERVERS: dns.server, HUB_DNS_CHECK_INTERVAL_MS: '50' } }));
stack.onStop(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill('SIGKILL');
    await once(worker, 'exit');
  }
});
test.after.always(async () => {
  await dns?.close();
});

test('a PENDING frontend logs its first DNS miss once, not one WARN line per check', async (t) => {
  worker = spawn(process.execPath, scriptArgs('workers/index.ts'), { env: { ...process.env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  worker.stdout!.on('data', (d) => (output += d));
  worker.stderr!.on('data', (d) => (output += d));
  await waitFor(async () => /workers started/.test(output), { what: 'the worker process', timeoutMs: 30_000 });

  const hub = await stack.hub();
  const created = await hub.call('POST', `${hub.h}/custom-frontends`, { body: { hostname: 'quiet.example.com' } });
  t.is(created.status, 201, created.text);
  const sql = new pg.Client({ connectionString: stack.databaseUrl });
  await sql.connect();
  try {
    // at least 20 checks have missed
    const execution = await waitFor(
      async () => {
        const r = await sql.query(`SELECT id, attempts FROM executions WHERE resource_id = $1 AND type = 'frontends.activateCustomFrontend'`, [
          created.json.id,
        ]);
        return r.rows[0]?.attempts >= 20 && r.rows[0];
      },
      { what: '20 DNS checks', timeoutMs: 60_000 },
    );
    const lines = output
      .split('\n')
      .filter((l) => l.includes(execution.id))
      .map((l) => JSON.parse(l));
    t.is(lines.filter((l) => l.level >= 40).length, 0, 'no WARN line for an expected wait');
    const said = lines.filter((l) => l.level === 30);
    t.is(said.length, 1, 'the first miss is said once');
    t.regex(said[0].reason, /DNS records not in place yet: A record of quiet\.example\.com/);
  } finally {
    await sql.end();
  }
  const frontend = (await hub.call('GET', `${hub.h}/custom-frontends/${created.json.id}`)).json;
  t.is(frontend.status, 'PENDING');
  t.regex(
    frontend.statusMessage,
    /^waiting for DNS records \(checked every 50 ms until \S+Z\): A record of quiet\.example\.com resolves to \[\], expected \[203\.0\.113\.10, 203\.0\.113\.11\]; CNAME of _acme-challenge\.quiet\.example\.com resolves to nothing, expected /,
  );
});
