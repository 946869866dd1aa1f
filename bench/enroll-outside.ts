/**
 * Cold enrollment measured from outside, the way a user meets it: `npm start` of this checkout on a data folder of its
 * own (embedded PostgreSQL, its redis-server, web, worker, clock and edge, with everything npm start chooses: flags,
 * log level, pools), a hub with BENCH_COLD (600) certificate request tokens and their JWTs made through the API, then
 * `npm start` again, and the first BENCH_COLD enrollments after that start at BENCH_COLD_CONCURRENCY (16), each
 * device with its own key. Printed: enrollments/s and the CPU each process spent per enrollment (from /proc), so that
 * bench:enroll's cold line can be checked against it. Target: <= 5.5 ms of CPU per enrollment summed over every
 * process (what 300/s on 2 cores needs with room); the rate is for information.
 *
 *   npm run bench:enroll-outside        (BENCH_COLD, BENCH_COLD_CONCURRENCY)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { deviceCsr } from './deviceCsr.js';
import { benchWorkspace, cpuMs, freePort, jsonRequest, mainThreadCpuMs, postgresCpuMs, timed, waitUntilAnswering } from './harness.js';

const COLD = Number(process.env.BENCH_COLD ?? 600);
const COLD_CONCURRENCY = Number(process.env.BENCH_COLD_CONCURRENCY ?? 16);

const ws = benchWorkspace({ budgetMs: 10 * 60_000 });
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

const request = jsonRequest.bind(null, agent);

interface Started {
  child: ChildProcess;
  output: () => string;
}

/** `npm start` in a process group of its own (stopped as Ctrl-C stops it), its output kept to read the children's pids. */
function npmStart(env: NodeJS.ProcessEnv): Started {
  const child = spawn('npm', ['start'], { cwd: process.cwd(), env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  ws.onCleanup(() => stop({ child, output: () => out }));
  return { child, output: () => out };
}

async function stop(s: Started): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  try {
    process.kill(-s.child.pid!, 'SIGINT');
  } catch {
    return;
  }
  await exited;
}

/** Until the API answers /healthz and the edge answers on its port (any status), or the start fails. */
async function ready(s: Started, api: URL, edgePort: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  const options = { alive: () => s.child.exitCode === null, failure: () => `npm start did not come up:\n${s.output().slice(-3000)}` };
  await waitUntilAnswering(`${api.origin}/healthz`, { ...options, ok: true, timeoutMs: deadline - Date.now() });
  await waitUntilAnswering(`http://127.0.0.1:${edgePort}/`, { ...options, timeoutMs: deadline - Date.now() });
}

/** The processes npm start runs, by role, from the lines it prints (`edgehub: web started (pid N)`, ...). */
function pidsOf(s: Started): Record<string, number[]> {
  const roles: Record<string, number[]> = {};
  for (const m of s.output().matchAll(/edgehub: ([a-z-]+)(?:\.\d+)? started \(pid (\d+)/g)) (roles[m[1]] ??= []).push(Number(m[2]));
  return roles;
}

/** npm start's own node process (the supervisor): the process of the group whose command line runs scripts/start. */
function supervisorPid(group: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (Number(fields[2]) === group && /node/.test(cmdline) && cmdline.includes('scripts/start')) return Number(entry);
    } catch {
      /* gone */
    }
  }
  return undefined;
}

try {
  const apiPort = await freePort();
  const api = new URL(`http://127.0.0.1:${apiPort}`);
  const edgePort = await freePort();
  const dataDir = path.join(ws.work, 'data');
  const adminToken = randomBytes(24).toString('base64url');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(apiPort),
    HUB_EDGE_HTTP_PORT: String(edgePort),
    HUB_EDGE_HTTPS_PORT: String(await freePort()),
    HUB_DATA_DIR: dataDir,
    HUB_ADMIN_TOKEN: adminToken,
    PUBLIC_BASE_URL: api.origin,
  };

  // set-up through the API of a first start: a hub, a key, a token and its JWT per enrollment
  const setup = npmStart(env);
  await ready(setup, api, edgePort);
  const admin = `Bearer ${adminToken}`;
  const hub = await request(api, 'POST', '/admin/v1/hubs', { name: 'outside' }, admin);
  const key = await request(api, 'POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { name: 'bench' }, admin);
  const bearer = `Bearer ${key.json.token}`;
  const hubId: string = hub.json.id;
  const jwts: string[] = new Array(COLD);
  const csrs = await Promise.all(Array.from({ length: COLD }, (_, i) => deviceCsr(`device-${i}.outside.example`)));
  await timed(COLD, 16, async (i) => {
    const tok = await request(
      api,
      'POST',
      `/hub/${hubId}/certificate-request-tokens`,
      { name: `device-${i}`, commonName: `device-${i}.outside.example` },
      bearer,
    );
    if (tok.status !== 201) throw new Error(`token: ${tok.status} ${JSON.stringify(tok.json)}`);
    const jwt = await request(api, 'GET', `/hub/v2/${hubId}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`, undefined, bearer);
    if (jwt.status !== 200) throw new Error(`jwt: ${jwt.status} ${JSON.stringify(jwt.json)}`);
    jwts[i] = jwt.json.jwt;
  });
  await stop(setup);
  agent.destroy();

  // the measured start: the first enrollments after it
  const started = performance.now();
  const s = npmStart(env);
  await ready(s, api, edgePort);
  console.log(`start:   npm start answered (API and edge) ${((performance.now() - started) / 1000).toFixed(2)} s after it was run`);
  const roles = pidsOf(s);
  const supervisor = supervisorPid(s.child.pid!);
  const pgDir = path.join(dataDir, 'postgres');
  const cpu = () => {
    const out: Record<string, number> = { supervisor: cpuMs(supervisor), postgres: postgresCpuMs(pgDir) };
    for (const [role, pids] of Object.entries(roles)) out[role] = pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
    return out;
  };
  // what the web and worker processes' helper threads (V8's optimizing compiler above all) add to their main threads
  const mainThreads = () =>
    Object.fromEntries(['web', 'worker'].map((role) => [role, (roles[role] ?? []).reduce((sum, pid) => sum + mainThreadCpuMs(pid), 0)]));
  const mainBefore = mainThreads();
  const before = cpu();
  const failures: string[] = [];
  const ms = await timed(COLD, COLD_CONCURRENCY, async (i) => {
    const r = await request(api, 'POST', `/hub/v2/${hubId}/client-certificates/enroll`, { jwt: jwts[i], csr: csrs[i] });
    if (r.status !== 201) failures.push(`${r.status} ${JSON.stringify(r.json)}`);
  });
  const after = cpu();
  const mainAfter = mainThreads();
  if (failures.length) throw new Error(`${failures.length} enrollments failed, e.g. ${failures[0]}`);
  const rate = COLD / (ms / 1000);
  const per = Object.keys(after)
    .map((k) => [k, (after[k] - before[k]) / COLD] as const)
    .sort((a, b) => b[1] - a[1]);
  const total = per.reduce((sum, [, v]) => sum + v, 0);
  console.log(`cold:    the first ${COLD} enrollments after npm start, ${COLD_CONCURRENCY} concurrent clients: ${rate.toFixed(0)} enrollments/s`);
  console.log(
    `         CPU per enrollment ${total.toFixed(2)} ms (target <= 5.5: ${total <= 5.5 ? 'met' : 'NOT met'}): ${per.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}; load average ${os.loadavg()[0].toFixed(1)}`,
  );
  console.log(
    `         of it the main threads: ${['web', 'worker'].map((k) => `${k} ${((mainAfter[k] - mainBefore[k]) / COLD).toFixed(2)}`).join(', ')} (the rest of theirs is helper threads: V8's optimizing compiler)`,
  );
  await stop(s);
  await ws.cleanUp();
  process.exit(total <= 5.5 ? 0 : 1);
} catch (err) {
  console.error(`bench failed: ${(err as Error).message}`);
  await ws.cleanUp();
  process.exit(2);
}
