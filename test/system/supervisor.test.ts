import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { Supervisor } from '../../shared/supervisor.js';
import { gcFlags, oldGenerationFlags, youngGenerationFlags } from '../../shared/config.js';
import { pidAlive, spawnScript, type Spawned } from '../helpers/processes.js';
import { makeCall, useStack, waitFor } from '../helpers/stack.js';

/**
 * `npm start` heals: a child that dies is restarted while the others keep serving. Here the worker is SIGKILLed in
 * the middle of provisioning an IPsec tunnel; the API keeps answering throughout, the supervisor restarts the worker,
 * and the tunnel reaches DEPLOYED exactly once. The run uses two web processes (WEB_CONCURRENCY=2) on one port.
 */

// its database, redis and queue prefix are the ones npm start gets
const stack = useStack(test, { workers: false });
stack.onStop(async () => {
  for (const s of spawned) await s.kill();
});
const spawned: Spawned[] = [];

test('npm start: a SIGKILLed worker is restarted, the API keeps answering, the tunnel is DEPLOYED once', async (t) => {
  const port = await freePort();
  const tcpPort = await freePort();
  // the edge on free ports too: another test file may hold the default 8000/8443 meanwhile
  const start = spawnScript('scripts/start.ts', {
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    HUB_EDGE_HTTP_PORT: String(await freePort()),
    HUB_EDGE_HTTPS_PORT: String(await freePort()),
    // a TCP share range of its own: npm start claims its range, and other test files start stacks meanwhile
    HUB_EDGE_TCP_PORTS: `${tcpPort}-${tcpPort}`,
    HUB_PROVISION_DELAY_MS: '1500',
    WEB_CONCURRENCY: '2',
    HUB_GC_THREADS: 'single',
    HUB_GC_EDGE_OLD_MB: '80',
  });
  spawned.push(start);
  const call = makeCall(`http://127.0.0.1:${port}`);
  const admin = `Bearer ${stack.adminToken}`;
  await start.waitForLine(/web\.1 started \(pid \d+/, 'web.1');
  await start.waitForLine(/web\.2 started \(pid \d+/, 'web.2');
  const workerPid = Number((await start.waitForLine(/worker started \(pid (\d+)/, 'the worker'))[1]);
  const workerFlags = readFileSync(`/proc/${workerPid}/cmdline`, 'utf8').split('\0');
  t.true(workerFlags.includes('--single-threaded-gc'), 'HUB_GC_THREADS reaches the children');
  t.false(workerFlags.includes('--initial-old-space-size=80'), "HUB_GC_EDGE_OLD_MB is the edge's alone");
  const edgePid = Number((await start.waitForLine(/edge started \(pid (\d+)/, 'the edge'))[1]);
  const edgeFlags = readFileSync(`/proc/${edgePid}/cmdline`, 'utf8').split('\0');
  t.true(
    edgeFlags.includes('--single-threaded-gc') && edgeFlags.includes('--initial-old-space-size=80'),
    'the edge runs with its own flags after the common ones',
  );
  await waitFor(async () => (await call('GET', '/healthz').catch(() => ({ status: 0 }))).status === 200, { what: 'the API', timeoutMs: 60_000 });

  const hub = await call('POST', '/admin/v1/hubs', { auth: admin, body: { name: 'supervised', features: { ipsec: true } } });
  t.is(hub.status, 201);
  const key = await call('POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { auth: admin, body: { name: 'k' } });
  const api = makeCall(`http://127.0.0.1:${port}`, `Bearer ${key.json.token}`);
  const h = `/hub/v2/${hub.json.id}`;
  const created = await api('POST', `${h}/ipsec-tunnels`, { body: { name: 'kill-me', peerPublicIp: '203.0.113.90', peerCidr: '10.90.0.0/16' } });
  t.is(created.status, 202);
  const tunnelId: string = created.json.id;
  const executionPath = created.headers.get('location')!;

  // mid-provisioning: the execution runs and the VPN connection exists, the tunnel is not DEPLOYED yet
  await waitFor(
    async () => {
      const execution = (await api('GET', executionPath)).json;
      const rows = (await stack.sql.query('SELECT vpn_connection_id FROM ipsec_local_tunnels WHERE tunnel_id = $1', [tunnelId])).rows;
      return execution.status === 'RUNNING' && rows[0]?.vpn_connection_id;
    },
    { timeoutMs: 60_000, what: 'the worker to be mid-provisioning' },
  );
  const killedAt = Date.now();
  process.kill(workerPid, 'SIGKILL');

  // the API answers every request while the worker is down and while it comes back
  let requests = 0;
  const bad: string[] = [];
  const deployed = await waitFor(
    async () => {
      const [health, tunnel] = await Promise.all([call('GET', '/healthz'), api('GET', `${h}/ipsec-tunnels/${tunnelId}`)]);
      requests += 2;
      if (health.status !== 200) bad.push(`healthz ${health.status}`);
      if (tunnel.status !== 200) bad.push(`tunnel ${tunnel.status}`);
      return tunnel.json?.status === 'DEPLOYED' ? tunnel.json : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200, what: 'the tunnel to be DEPLOYED after the restart' },
  ).catch((err) => {
    t.log(start.output().slice(-6000));
    throw err;
  });
  t.log(
    `worker SIGKILLed mid-job: tunnel DEPLOYED ${((Date.now() - killedAt) / 1000).toFixed(1)} s later (restart + takeover); ${requests} API requests meanwhile`,
  );
  t.deepEqual(bad, [], 'every API request answered while the worker was down');

  const restart = await start.waitForLine(
    /worker \(pid (\d+)\) exited with signal SIGKILL after [\d.]+ s; restarting it in [\d.]+ s \(restart #1\)/,
    'the restart log line',
  );
  t.is(Number(restart[1]), workerPid);
  const newPid = Number((await start.waitForLine(/worker started \(pid (\d+)[^\n]*\n(?![\s\S]*worker started)/, 'the new worker'))[1]);
  t.not(newPid, workerPid);
  t.true(pidAlive(newPid));

  // exactly once: one execution, SUCCEEDED, one allocation
  const execution = await waitFor(async () => {
    const e = (await api('GET', executionPath)).json;
    return e.status === 'SUCCEEDED' ? e : undefined;
  });
  t.is(execution.resourceId, tunnelId);
  t.is((await api('GET', `/hub/${hub.json.id}/executions?resourceId=${tunnelId}`)).json.totalElements, 1);
  t.is((await stack.sql.query('SELECT count(*)::int AS n FROM ipsec_local_tunnels WHERE tunnel_id = $1', [tunnelId])).rows[0].n, 1);
  t.is(deployed.id, tunnelId);

  // only SIGTERM stops everything, and then every child is gone
  const pids = [...start.output().matchAll(/started \(pid (\d+)/g)].map((m) => Number(m[1]));
  start.child.kill('SIGTERM');
  const code = await new Promise((resolve) => start.child.once('exit', (c) => resolve(c)));
  t.is(code, 0);
  await waitFor(async () => pids.every((pid) => !pidAlive(pid)), { what: 'every child to exit', timeoutMs: 30_000 });
});

test('a child that dies at once, again and again, is reported as crash-looping and retried with growing delays', async (t) => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'crash-'));
  const script = path.join(dir, 'crash.mjs');
  writeFileSync(script, 'console.error("cannot start: something is wrong"); process.exit(3);\n');
  const lines: string[] = [];
  const supervisor = new Supervisor([{ name: 'broken', script }], {
    env: { ...process.env },
    backoffMs: 20,
    maxBackoffMs: 160,
    crashLoopAfter: 4,
    log: (l) => lines.push(l),
  });
  supervisor.start();
  try {
    await waitFor(async () => lines.filter((l) => /CRASH-LOOPING/.test(l)).length >= 2, { what: 'the crash loop report', timeoutMs: 60_000 });
  } finally {
    await supervisor.stop();
  }
  const restarts = lines.filter((l) => /exited with exit code 3/.test(l));
  t.regex(restarts[0], /restarting it in 20 ms \(restart #1\)/);
  const delays = restarts.map((l) => Number(/restarting it in (\d+) ms/.exec(l)![1]));
  t.deepEqual(delays.slice(0, 5), [20, 40, 80, 160, 160], 'doubling up to the longest delay');
  const loop = lines.find((l) => /CRASH-LOOPING/.test(l))!;
  t.regex(loop, /broken is CRASH-LOOPING: it died 4 times in a row/);
  t.regex(loop, /last: exit code 3/);
});

test("every child runs with the node flags it is given, and one with its own after them; the collector's are single-threaded on 2 cores or fewer, its young generation starts at 16 MB, the edge's old generation where HUB_GC_EDGE_OLD_MB says", async (t) => {
  t.deepEqual(youngGenerationFlags(16), ['--min-semi-space-size=16']);
  t.deepEqual(oldGenerationFlags(80), ['--initial-old-space-size=80']);
  t.deepEqual(oldGenerationFlags(0), [], "HUB_GC_EDGE_OLD_MB=0: V8's default");
  t.deepEqual(youngGenerationFlags(0), [], "HUB_GC_YOUNG_MB=0: V8's default");
  t.deepEqual(gcFlags('auto', 2), ['--single-threaded-gc']);
  t.deepEqual(gcFlags('auto', 1), ['--single-threaded-gc']);
  t.deepEqual(gcFlags('auto', 4), []);
  t.deepEqual(gcFlags('single', 64), ['--single-threaded-gc']);
  t.deepEqual(gcFlags('parallel', 2), []);

  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'flags-'));
  // each child writes the flags it runs with to a file named by its environment
  const script = path.join(dir, 'flags.mjs');
  writeFileSync(
    script,
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(process.env.FLAGS_OUT, JSON.stringify(process.execArgv));\nsetInterval(() => {}, 1000);\n`,
  );
  const out = (name: string) => path.join(dir, `${name}.json`);
  const supervisor = new Supervisor(
    [
      { name: 'flagged', script, instanceEnv: () => ({ FLAGS_OUT: out('flagged') }) },
      { name: 'own', script, instanceEnv: () => ({ FLAGS_OUT: out('own') }), execArgv: ['--initial-old-space-size=80'] },
    ],
    { env: { ...process.env }, execArgv: ['--single-threaded-gc'], log: () => undefined },
  );
  supervisor.start();
  const flagsOf = (name: string) =>
    waitFor(
      async () => {
        try {
          return JSON.parse(readFileSync(out(name), 'utf8')) as string[];
        } catch {
          return undefined;
        }
      },
      { what: `${name} to write its flags` },
    );
  try {
    t.deepEqual(await flagsOf('flagged'), ['--single-threaded-gc']);
    t.deepEqual(await flagsOf('own'), ['--single-threaded-gc', '--initial-old-space-size=80']);
  } finally {
    await supervisor.stop();
  }
});
