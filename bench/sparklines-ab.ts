/**
 * A/B of `GET H/sparklines?duration=P1D` (1,000 shares x 24 hourly points, 1.7 MB of JSON) between two API processes
 * against the same PostgreSQL and Redis, in alternating rounds of one run: for judging a change to the answer's path
 * by the API's CPU per answer and its latency, which the machine's load moves more than most changes do.
 *
 *   BENCH_A_DIR=/tmp/old-checkout BENCH_B_DIR=. npm run bench:sparklines-ab
 *
 * BENCH_A_DIR / BENCH_B_DIR: code directories (default .); BENCH_A_ENV / BENCH_B_ENV: JSON of extra environment for
 * each process; BENCH_SHARES (default 1000); BENCH_ROUNDS (default 4) rounds of BENCH_ANSWERS (default 40) answers,
 * one at a time as bench:sparklines asks. The day's hour buckets are written with one INSERT (what a roll-up leaves);
 * the tiered query's own cost is bench:sparklines' business. Prints per round and side: CPU ms per answer of the API
 * process (and of PostgreSQL, both sides alike), p50 and p95; then the medians.
 */
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { benchWorkspace, createShares, cpuMs, jsonClient, median, percentile, postgresCpuMs, startAbSides, startServices } from './harness.js';

const ws = benchWorkspace({ budgetMs: 15 * 60_000 });
const SHARES = Number(process.env.BENCH_SHARES ?? 1_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const ANSWERS = Number(process.env.BENCH_ANSWERS ?? 40);

try {
  const services = await startServices(ws);
  const adminToken = 'bench-admin-token-0123456789';
  const sides = await startAbSides(ws, services, adminToken);
  const admin = jsonClient(sides.A.url, `Bearer ${adminToken}`);
  const hub = (await admin('POST', '/admin/v1/hubs', { name: 'ab' })).json;
  const h = `/hub/${hub.id}`;
  await createShares(admin, h, SHARES);
  const client = new pg.Client({ connectionString: services.databaseUrl });
  await client.connect();
  const { rowCount } = await client.query(
    `INSERT INTO usage_hours (hub_id, scope, scope_id, bucket_start, rx, tx)
     SELECT $1, 'share', s.z_id, date_trunc('hour', now()) - h * interval '1 hour', (s.n * 7919 + h * 104729) % 1000000 * 60, (s.n * 31 + h * 17) % 50000 * 60
     FROM (SELECT z_id, row_number() OVER (ORDER BY z_id) AS n FROM shares WHERE hub_id = $1) s, generate_series(0, 24) h`,
    [hub.id],
  );
  await client.query('VACUUM ANALYZE usage_hours');
  await client.end();

  const ask = async (url: string) => {
    const started = performance.now();
    const res = await fetch(`${url}${h}/sparklines?duration=P1D`, { headers: { authorization: `Bearer ${adminToken}` } });
    const body = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`GET sparklines: ${res.status} ${body.toString().slice(0, 200)}`);
    return { ms: performance.now() - started, body };
  };
  const a = await ask(sides.A.url);
  const b = await ask(sides.B.url);
  if (!a.body.equals(b.body)) throw new Error('the two sides answer differently');
  console.log(`${SHARES} shares, ${rowCount} hour buckets; each answer ${a.body.length.toLocaleString('en')} bytes, identical on both sides`);

  const round = async (side: { url: string; child: ChildProcess }) => {
    const before = { api: cpuMs(side.child.pid), postgres: postgresCpuMs(services.postgresDataDir) };
    const times: number[] = [];
    for (let i = 0; i < ANSWERS; i++) times.push((await ask(side.url)).ms);
    return {
      api: (cpuMs(side.child.pid) - before.api) / ANSWERS,
      postgres: (postgresCpuMs(services.postgresDataDir) - before.postgres) / ANSWERS,
      p50: percentile(times, 50),
      p95: percentile(times, 95),
    };
  };
  for (let i = 0; i < 5; i++) for (const side of [sides.A, sides.B]) await ask(side.url); // warm-up
  const api: Record<'A' | 'B', number[]> = { A: [], B: [] };
  const p95: Record<'A' | 'B', number[]> = { A: [], B: [] };
  for (let r = 1; r <= ROUNDS; r++) {
    for (const name of ['A', 'B'] as const) {
      const m = await round(sides[name]);
      api[name].push(m.api);
      p95[name].push(m.p95);
      console.log(
        `round ${r} ${name}  API ${m.api.toFixed(2)} ms CPU/answer  PostgreSQL ${m.postgres.toFixed(2)} ms  p50 ${m.p50.toFixed(1)} ms  p95 ${m.p95.toFixed(1)} ms`,
      );
    }
  }
  console.log(
    `median API CPU ms/answer: A ${median(api.A).toFixed(2)}, B ${median(api.B).toFixed(2)}, B - A ${(median(api.B) - median(api.A)).toFixed(2)}; median p95: A ${median(p95.A).toFixed(1)}, B ${median(p95.B).toFixed(1)}`,
  );
} finally {
  await ws.cleanUp();
}
process.exit(0);
