/**
 * A/B of one API path between two code directories, in alternating rounds of one run, so that both see the same
 * machine: for judging one change by the API's CPU per request, which moves a few µs per change while req/s moves
 * with whatever else the machine runs.
 *
 *   BENCH_A_DIR=/tmp/old-checkout BENCH_B_DIR=. npm run bench:api-ab
 *
 * Each side has a database of its own on the same PostgreSQL, migrated by its own code (so a side may change the
 * schema), one fresh hub that grows through the run, and no ANALYZE. Each round starts both sides' API processes
 * afresh and measures, alternating A and B: the first BENCH_COLD requests (cold), then BENCH_DURATION seconds (warm).
 *
 * BENCH_A_DIR / BENCH_B_DIR: code directories (a checkout, e.g. `git archive <commit> | tar -x -C dir` with a
 * node_modules symlink; default .); BENCH_A_ENV / BENCH_B_ENV: JSON of extra environment for each process;
 * BENCH_PATH: `read` (the authenticated GET of one token; default) or `create` (POST of a token); BENCH_CONNECTIONS
 * (default 50 for reads, 20 for creates: bench:api's loads); BENCH_ROUNDS (default 4), BENCH_DURATION (default 6), BENCH_COLD (default 2000). Prints req/s, p99
 * and the API's (and PostgreSQL's) CPU µs per request per round, and the medians.
 */
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import {
  benchWorkspace,
  cpuMs,
  freePort,
  jsonClient,
  loadTest,
  median,
  migratedDatabase,
  postgresCpuMs,
  spawnApiIn,
  startServices,
  stopChild,
  waitUntilHealthy,
} from './harness.js';

const ws = benchWorkspace({ budgetMs: 25 * 60_000 });
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const DURATION = Number(process.env.BENCH_DURATION ?? 6);
const COLD = Number(process.env.BENCH_COLD ?? 2000);
const PATH = process.env.BENCH_PATH === 'create' ? 'create' : 'read';
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? (PATH === 'read' ? 50 : 20));
const SIDES = ['A', 'B'] as const;
type Side = (typeof SIDES)[number];

try {
  const services = await startServices(ws);
  const adminToken = 'bench-admin-token-0123456789';
  const dirs: Record<Side, string> = { A: process.env.BENCH_A_DIR ?? '.', B: process.env.BENCH_B_DIR ?? '.' };
  const envs: Record<Side, Record<string, string>> = { A: JSON.parse(process.env.BENCH_A_ENV ?? '{}'), B: JSON.parse(process.env.BENCH_B_ENV ?? '{}') };
  const databases = { A: await migratedDatabase(services, 'side_a', dirs.A), B: await migratedDatabase(services, 'side_b', dirs.B) };

  const start = async (side: Side, profile = true) => {
    const port = await freePort();
    const child = spawnApiIn(ws, services, dirs[side], databases[side], port, adminToken, { ...envs[side], ...(profile ? {} : { BENCH_PROFILE: '' }) });
    const url = `http://127.0.0.1:${port}`;
    await waitUntilHealthy(url, child);
    return { url, child };
  };

  // per side: a hub, its key and a token to read, made by a process that is then stopped (the measured ones start cold)
  const fixtures = {} as Record<Side, { hub: string; authorization: string; tokenId: string }>;
  for (const side of SIDES) {
    const setup = await start(side, false);
    const admin = jsonClient(setup.url, `Bearer ${adminToken}`);
    const hub = (await admin('POST', '/admin/v1/hubs', { name: 'ab' })).json;
    const key = (await admin('POST', `/admin/v1/hubs/${hub.id}/api-keys`, { name: 'ab' })).json;
    const authorization = `Bearer ${key.token}`;
    const token = await jsonClient(setup.url, authorization)('POST', `/hub/${hub.id}/certificate-request-tokens`, { name: 'read-me' });
    if (token.status !== 201) throw new Error(`creating a token failed: ${token.status} ${token.text}`);
    fixtures[side] = { hub: hub.id, authorization, tokenId: token.json.id };
    await stopChild(setup.child);
  }

  let names = 0;
  const run = async (side: Side, api: { url: string; child: ChildProcess }, load: { amount: number } | { duration: number }) => {
    const f = fixtures[side];
    const before = cpuMs(api.child.pid);
    const pgBefore = postgresCpuMs(services.postgresDataDir);
    const r = await loadTest(
      PATH === 'read'
        ? {
            url: `${api.url}/hub/${f.hub}/certificate-request-tokens/${f.tokenId}`,
            connections: CONNECTIONS,
            ...load,
            headers: { authorization: f.authorization },
          }
        : {
            url: `${api.url}/hub/${f.hub}/certificate-request-tokens`,
            connections: CONNECTIONS,
            ...load,
            method: 'POST',
            headers: { authorization: f.authorization, 'content-type': 'application/json' },
            requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify({ name: `n-${names++}` }) }) }],
          },
    );
    if (r.non2xx || r.errors) throw new Error(`${side}: non-2xx ${r.non2xx}, errors ${r.errors}`);
    return {
      rps: r.rps,
      p99: r.latency.p99,
      us: ((cpuMs(api.child.pid) - before) * 1000) / r.requests.total,
      pgUs: ((postgresCpuMs(services.postgresDataDir) - pgBefore) * 1000) / r.requests.total,
    };
  };

  console.log(
    `bench:api-ab ${PATH} at ${CONNECTIONS} connections: A ${dirs.A}, B ${dirs.B}; ${ROUNDS} rounds on fresh processes, each the first ${COLD} requests (cold) then ${DURATION} s (warm); load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  const us = { cold: { A: [] as number[], B: [] as number[] }, warm: { A: [] as number[], B: [] as number[] } };
  const rps = { cold: { A: [] as number[], B: [] as number[] }, warm: { A: [] as number[], B: [] as number[] } };
  for (let round = 1; round <= ROUNDS; round++) {
    const order: Side[] = round % 2 ? ['A', 'B'] : ['B', 'A'];
    const apis = { A: await start('A'), B: await start('B') };
    for (const phase of ['cold', 'warm'] as const) {
      for (const side of order) {
        const m = await run(side, apis[side], phase === 'cold' ? { amount: COLD } : { duration: DURATION });
        us[phase][side].push(m.us);
        rps[phase][side].push(m.rps);
        console.log(
          `round ${round} ${phase} ${side} ${Math.round(m.rps).toLocaleString('en').padStart(6)} req/s  p99 ${String(m.p99).padStart(3)} ms  CPU ${m.us.toFixed(1)} µs/request (PostgreSQL ${m.pgUs.toFixed(1)})`,
        );
      }
    }
    await Promise.all([stopChild(apis.A.child), stopChild(apis.B.child)]);
  }
  for (const phase of ['cold', 'warm'] as const) {
    const ratios = rps[phase].B.map((b, i) => b / rps[phase].A[i]);
    console.log(
      `${phase}: median CPU µs/request A ${median(us[phase].A).toFixed(1)}, B ${median(us[phase].B).toFixed(1)}, B - A ${(median(us[phase].B) - median(us[phase].A)).toFixed(1)}; ` +
        `req/s B/A per round ${ratios.map((x) => x.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)})`,
    );
  }
  console.log(
    `load average at the end ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
} finally {
  await ws.cleanUp();
}
process.exit(0);
