/**
 * Ctrl-C in the terminal that runs `npm start` sends SIGINT to its whole process group at once. The embedded
 * PostgreSQL and the redis-server must not take it: the supervisor stops the children first (the edge writes its
 * last usage counters then), then Redis, then PostgreSQL. Here `npm start` runs with its own PostgreSQL and Redis
 * in a process group of its own, the edge carries a request, and the group gets SIGINT as a terminal sends it.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import pg from 'pg';
import { freePortRange, startPostgres } from '../../scripts/services/index.js';
import { edgeRequest, startBackend, type Backend } from '../helpers/edge.js';
import { cleanUpHubs, startHub, type Run } from '../helpers/npmStart.js';
import { pidAlive } from '../helpers/processes.js';
import { makeCall, waitFor } from '../helpers/stack.js';

/** The superuser's password npm start generated and keeps in the data folder. */
const keptPassword = (dataDir: string) => readFileSync(path.join(dataDir, 'postgres-password'), 'utf8').trim();

let backend: Backend;
cleanUpHubs(test);

test.before(async () => {
  backend = await startBackend((req, res) => {
    req.resume();
    req.on('end', () => res.end('from the backend'));
  });
});
test.after.always(async () => {
  await backend?.close();
});

const exitCode = (run: Run) => run.start.child.exitCode ?? new Promise((resolve) => run.start.child.once('exit', (c) => resolve(c)));

/** Every process it started is gone (a child's pid can outlive npm start by the moment it takes to be reaped). */
const allGone = (run: Run) =>
  waitFor(async () => run.started.every((pid) => !pidAlive(pid)), { what: `no process left behind of ${run.started.join(', ')}`, timeoutMs: 10_000 });

/**
 * `stop`: the terminal's Ctrl-C (SIGINT to the whole process group), the terminal closing (SIGHUP to the whole
 * group), or SIGTERM to npm start alone.
 */
const stopsInOrder = test.macro(async (t, { stop, edgeWorkers }: { stop: 'ctrl-c' | 'sighup' | 'sigterm'; edgeWorkers?: number }) => {
  t.timeout(4 * 60_000);
  // web, worker, clock, then the edges take consecutive metrics ports from the base
  const run = await startHub(edgeWorkers ? { edgeWorkers, metricsBase: await freePortRange(3 + edgeWorkers) } : {});
  const { start, dataDir, port, edgePort, adminToken } = run;
  const call = makeCall(`http://127.0.0.1:${port}`);
  const admin = `Bearer ${adminToken}`;
  await waitFor(async () => (await call('GET', '/healthz').catch(() => ({ status: 0 }))).status === 200, { what: 'the API', timeoutMs: 60_000 });
  const hub = await call('POST', '/admin/v1/hubs', { auth: admin, body: { name: 'ctrl-c' } });
  t.is(hub.status, 201);
  const key = await call('POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { auth: admin, body: { name: 'k' } });
  const api = makeCall(`http://127.0.0.1:${port}`, `Bearer ${key.json.token}`);
  const frontends = await api('GET', `/hub/${hub.json.id}/frontends`);
  const frontendId = frontends.json.find((f: { publicName: string }) => f.publicName === 'public').id;
  const share = await api('POST', `/hub/${hub.json.id}/shares`, { body: { name: 'web', frontendIds: [frontendId], target: backend.url } });
  t.is(share.status, 201, share.text);
  const host = new URL(share.json.frontendEndpoint).hostname;
  await waitFor(async () => (await edgeRequest(edgePort, host).catch(() => ({ status: 0 }))).status === 200, {
    what: 'the edge routing the share',
    timeoutMs: 30_000,
  });

  if (edgeWorkers) {
    // HUB_EDGE_WORKERS edge children on the same ports, each with its metrics on the port the start log names
    const ports = [...start.output().matchAll(/edge\.\d+ started \(pid \d+, metrics on port (\d+)\)/g)].map((m) => Number(m[1]));
    t.is(ports.length, edgeWorkers, start.output().slice(-3000));
    for (const metricsPort of ports) {
      const scrape = await waitFor(
        async () => {
          const r = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => undefined);
          return r?.status === 200 ? r.text() : undefined;
        },
        { what: `the edge's metrics on port ${metricsPort}`, timeoutMs: 30_000 },
      );
      t.regex(scrape, /# TYPE edgehub_edge_requests_total counter/, `port ${metricsPort}`);
      t.regex(scrape, /\{[^}]*process="edge"/, `port ${metricsPort}`);
    }
  }

  // the last request before Ctrl-C: its bytes are counted only in the edge's memory until it stops
  const body = 'x'.repeat(64 * 1024);
  const last = await edgeRequest(edgePort, host, { method: 'POST', body });
  t.is(last.status, 200);

  if (stop === 'ctrl-c')
    process.kill(-start.child.pid!, 'SIGINT'); // what a terminal does on Ctrl-C
  else if (stop === 'sighup')
    process.kill(-start.child.pid!, 'SIGHUP'); // what a closing terminal does
  else start.child.kill('SIGTERM');
  const code = await exitCode(run);
  const output = start.output();
  t.is(code, 0, output.slice(-4000));
  await allGone(run);
  t.false(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'PostgreSQL shut down cleanly');

  // the edge's last counters are in the database
  const postgres = await startPostgres(path.join(dataDir, 'postgres'), { persistent: true, password: keptPassword(dataDir) });
  try {
    const sql = new pg.Client({ connectionString: postgres.url('edgehub') });
    await sql.connect();
    const { rows } = await sql.query(
      `SELECT coalesce(sum(rx), 0)::int AS rx, coalesce(sum(tx), 0)::int AS tx FROM usage_hours WHERE scope = 'share' AND scope_id = $1`,
      [share.json.zId],
    );
    await sql.end();
    t.log(`stored usage of the share: ${JSON.stringify(rows[0])}`);
    t.true(rows[0].rx > body.length, `rx ${rows[0].rx}`);
    t.true(rows[0].tx > 'from the backend'.length, `tx ${rows[0].tx}`);
  } finally {
    await postgres.stop();
  }
  // and PostgreSQL stopped after the children had closed their connections (it cut none of them)
  t.notRegex(output, /terminating connection due to administrator command/);
  // and no child was cut short in the middle of a transaction (as by taking the same Ctrl-C as a second signal)
  t.notRegex(output, /unexpected EOF on client connection/);
  t.notRegex(output, /usage flush failed/);
});

test.serial('npm start: Ctrl-C stops the children, then Redis, then PostgreSQL; the edge counters of the last request are stored', stopsInOrder, {
  stop: 'ctrl-c',
});
test.serial('npm start: the terminal closing (SIGHUP to the group) does the same', stopsInOrder, { stop: 'sighup' });
test.serial('npm start: SIGTERM to it alone does the same, with HUB_EDGE_WORKERS=2 edge children', stopsInOrder, { stop: 'sigterm', edgeWorkers: 2 });

// the kernel stops them (their parent-death signal, Linux only) when npm start dies without stopping them
(process.platform === 'linux' ? test.serial : test.serial.skip)('npm start SIGKILLed: its children, PostgreSQL and redis-server stop too', async (t) => {
  t.timeout(4 * 60_000);
  const run = await startHub();
  run.start.child.kill('SIGKILL'); // npm start alone: nothing else gets a signal from us
  await exitCode(run);
  await allGone(run);
  // PostgreSQL shut down cleanly: its data starts again at once
  const postgres = await startPostgres(path.join(run.dataDir, 'postgres'), { persistent: true, password: keptPassword(run.dataDir) });
  await postgres.stop();
  t.pass();
});
