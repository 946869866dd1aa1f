/**
 * A/B of the authenticated read between two API processes against the same PostgreSQL and Redis, in alternating
 * rounds of one run, so that both see the same machine: for judging one change by the API's CPU per request, which
 * moves a few µs per change while req/s moves with whatever else the machine runs.
 *
 *   BENCH_A_DIR=/tmp/old-checkout BENCH_B_DIR=. npm run bench:api-ab
 *
 * BENCH_A_DIR / BENCH_B_DIR: code directories (a checkout, e.g. `git archive <commit> | tar -x -C dir` with a
 * node_modules symlink; default .); BENCH_A_ENV / BENCH_B_ENV: JSON of extra environment for each process;
 * BENCH_ROUNDS (default 4) rounds of BENCH_DURATION seconds (default 6) each, at 50 connections. Prints req/s, p99
 * and CPU µs per request per round, and the medians.
 */
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { benchWorkspace, cpuMs, jsonClient, median, startAbSides, startServices } from './harness.js';

const ws = benchWorkspace({ budgetMs: 15 * 60_000 });
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const DURATION = Number(process.env.BENCH_DURATION ?? 6);

try {
  const services = await startServices(ws);
  const adminToken = 'bench-admin-token-0123456789';
  const sides = await startAbSides(ws, services, adminToken);
  const admin = jsonClient(sides.A.url, `Bearer ${adminToken}`);
  const hub = (await admin('POST', '/admin/v1/hubs', { name: 'ab' })).json;
  const key = (await admin('POST', `/admin/v1/hubs/${hub.id}/api-keys`, { name: 'ab' })).json;
  const authorization = `Bearer ${key.token}`;
  const token = await jsonClient(sides.A.url, authorization)('POST', `/hub/${hub.id}/certificate-request-tokens`, { name: 'read-me' });
  if (token.status !== 201) throw new Error(`creating a token failed: ${token.status} ${token.text}`);

  const run = async (side: { url: string; child: ChildProcess }, seconds: number) => {
    const before = cpuMs(side.child.pid);
    const r = await autocannon({ url: `${side.url}/hub/${hub.id}/certificate-request-tokens/${token.json.id}`, connections: 50, duration: seconds, headers: { authorization } });
    if (r.non2xx || r.errors) throw new Error(`non-2xx ${r.non2xx}, errors ${r.errors}`);
    return { rps: r.requests.total / r.duration, p99: r.latency.p99, us: ((cpuMs(side.child.pid) - before) * 1000) / r.requests.total };
  };
  await run(sides.A, 2); // warm-up: JIT, pools, prepared statements
  await run(sides.B, 2);
  const us: Record<'A' | 'B', number[]> = { A: [], B: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of ['A', 'B'] as const) {
      const m = await run(sides[name], DURATION);
      us[name].push(m.us);
      console.log(`round ${round} ${name} ${Math.round(m.rps).toLocaleString('en').padStart(6)} req/s  p99 ${String(m.p99).padStart(3)} ms  CPU ${m.us.toFixed(1)} µs/request`);
    }
  }
  console.log(`median CPU µs/request: A ${median(us.A).toFixed(1)}, B ${median(us.B).toFixed(1)}, B - A ${(median(us.B) - median(us.A)).toFixed(1)}`);
} finally {
  await ws.cleanUp();
}
process.exit(0);
