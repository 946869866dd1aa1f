/**
 * Sparklines for 1,000 shares over one day of 1-minute samples (1.44M raw samples), ingested in one backfill through
 * insertSamples (which folds them into the buckets as it stores them): measured right after the backfill and again
 * after the roll-up and VACUUM ANALYZE. The service's path (hour buckets plus any raw samples in no bucket, one
 * grouped query) against a baseline measured in the same run: the same sparklines aggregated from the raw samples
 * table. The answers are compared for equality first. Targets: p95 < 50 ms in both phases, >= 20x the raw aggregation.
 *
 *   node --import tsx bench/sparklines.ts        (BENCH_SHARES, BENCH_ITERATIONS, BENCH_RAW_ITERATIONS,
 *                                                 BENCH_BACKFILL_CONCURRENCY)
 *
 * Starts its own embedded PostgreSQL, redis-server and API process, and stops them.
 */
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { QueryTypes } from 'sequelize';
import { resetConfig } from '../shared/config.js';
import { closeDb, db, initDb } from '../shared/db.js';
import { bucketIndex, bucketTimestamps, fill, queryShareSeries, type UsagePoint } from '../shared/metrics/query.js';
import { rollUp } from '../workers/rollup.js';
import { insertSamples, type UsageRow } from '../shared/metrics/store.js';
import { planWindow, type MetricsWindow } from '../shared/metrics/window.js';
import {
  benchWorkspace,
  cpuMs,
  createShares,
  freePort,
  jsonClient,
  percentile,
  postgresCpuMs,
  startProcess,
  startServices,
  waitUntilHealthy,
} from './harness.js';

const SHARES = Number(process.env.BENCH_SHARES ?? 1_000);
const MINUTES = 24 * 60;
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 50);
const RAW_ITERATIONS = Number(process.env.BENCH_RAW_ITERATIONS ?? 10);
const BACKFILL_CONCURRENCY = Number(process.env.BENCH_BACKFILL_CONCURRENCY ?? 4);

const ws = benchWorkspace({ budgetMs: 10 * 60_000 });

interface Timings {
  times: number[];
}
const timings = (): Timings => ({ times: [] });

async function timeOnce(into: Timings, run: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  await run();
  into.times.push(performance.now() - started);
}

const summary = (t: Timings) => ({ p50: percentile(t.times, 50), p95: percentile(t.times, 95) });

/**
 * The baseline: the same sparklines aggregated from the raw samples table (what the tiers exist to avoid), written
 * as well as the tiered query: one grouped statement, the same bucket arithmetic, the same decoding.
 */
async function rawSparklines(hubId: string, shareIds: string[], window: MetricsWindow): Promise<Map<string, UsagePoint[]>> {
  const rows = await db().query<{ id: string; i: number; rx: string; tx: string }>(
    `SELECT share_id AS id, ${bucketIndex('ts', '$2', '$4')} AS i, sum(rx)::bigint AS rx, sum(tx)::bigint AS tx
     FROM usage_samples
     WHERE hub_id = $1 AND share_id IS NOT NULL AND ts >= $2::timestamptz AND ts < $3::timestamptz
     GROUP BY 1, 2`,
    { bind: [hubId, new Date(window.startMs).toISOString(), new Date(window.endMs).toISOString(), window.stepMs / 1000], type: QueryTypes.SELECT },
  );
  const byShare = new Map<string, typeof rows>(shareIds.map((id) => [id, []]));
  for (const row of rows) byShare.get(row.id)?.push(row);
  const timestamps = bucketTimestamps(window);
  return new Map([...byShare].map(([id, shareRows]) => [id, fill(window, shareRows, timestamps)]));
}

const ms = (x: number) => `${x.toFixed(1)} ms`;

try {
  const services = await startServices(ws);

  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const adminToken = 'bench-admin-token-0123456789';
  const env = {
    DATABASE_URL: services.databaseUrl,
    REDIS_URL: services.redisUrl,
    HUB_ADMIN_TOKEN: adminToken,
    HUB_DATA_DIR: path.join(ws.work, 'data'),
    PORT: String(port),
    LOG_LEVEL: 'silent',
  };
  const api = startProcess(ws, 'api/server.ts', { ...process.env, ...env, HUB_PROCESS: 'web' });
  await waitUntilHealthy(baseUrl, api);
  const pgDir = services.postgresDataDir;
  Object.assign(process.env, env);
  resetConfig();
  await initDb();
  ws.onCleanup(() => closeDb());

  const call = jsonClient(baseUrl, `Bearer ${adminToken}`);

  // 1,000 shares of one hub, created through the API
  const hub = (await call('POST', '/admin/v1/hubs', { name: 'bench' })).json;
  const h = `/hub/${hub.id}`;
  const { envZId, zIds: shareIds } = await createShares(call, h, SHARES);
  // One backfill of the whole day through the store every writer uses (insertSamples: COPY + bucket upserts in one
  // transaction): one sample per share and minute, at a varying second within the minute, sent oldest first in
  // batches of 10,000 (the most one usage request may carry), BACKFILL_CONCURRENCY at once.
  const now = Date.now();
  const batchMinutes = Math.max(1, Math.floor(10_000 / SHARES));
  const batchOf = (firstMinute: number): UsageRow[] => {
    const rows: UsageRow[] = [];
    for (let m = firstMinute; m > firstMinute - batchMinutes && m >= 0; m--) {
      for (let n = 1; n <= SHARES; n++) {
        const ts = now - 60_000 - m * 60_000 + ((n * 7 + m) % 60) * 1000;
        rows.push({
          hubId: hub.id,
          shareId: shareIds[n - 1],
          envZId,
          rx: (n * 7919 + m * 104729) % 1_000_000,
          tx: (n * 31 + m * 17) % 50_000,
          timestamp: new Date(ts).toISOString(),
        });
      }
    }
    return rows;
  };
  const firstMinutes: number[] = [];
  for (let m = MINUTES - 1; m >= 0; m -= batchMinutes) firstMinutes.push(m);
  const backfillStarted = performance.now();
  let nextBatch = 0;
  await Promise.all(
    Array.from({ length: BACKFILL_CONCURRENCY }, async () => {
      while (nextBatch < firstMinutes.length) await insertSamples(batchOf(firstMinutes[nextBatch++]));
    }),
  );
  const backfillMs = performance.now() - backfillStarted;
  const [{ n: sampleCount }] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM usage_samples', { type: QueryTypes.SELECT });
  console.log(
    `sparklines: ${SHARES} shares; backfill of ${sampleCount.toLocaleString('en')} samples (one per share and minute over a day) through insertSamples in ${firstMinutes.length} batches, ${BACKFILL_CONCURRENCY} at once: ${(backfillMs / 1000).toFixed(1)} s, ${Math.round(sampleCount / (backfillMs / 1000)).toLocaleString('en')} samples/s`,
  );

  const window = planWindow({ durationMs: 24 * 3_600_000, targetPoints: 30 });
  const sparklinesOverHttp = async () => {
    const res = await fetch(`${baseUrl}${h}/sparklines?duration=P1D`, { headers: { authorization: `Bearer ${adminToken}`, accept: 'application/json' } });
    if (res.status !== 200) throw new Error(`GET sparklines: ${res.status}`);
    await res.arrayBuffer(); // the whole response, without the client's JSON parsing
  };

  /** How often autovacuum has vacuumed and analysed the metrics tables (a run during a measurement competes for the cores). */
  const maintenance = async (): Promise<Record<string, number>> => {
    const rows = await db().query<{ relname: string; vacuums: number; analyzes: number }>(
      `SELECT relname, autovacuum_count::int AS vacuums, autoanalyze_count::int AS analyzes FROM pg_stat_user_tables WHERE relname IN ('usage_samples', 'usage_hours', 'usage_minutes')`,
      { type: QueryTypes.SELECT },
    );
    return Object.fromEntries(
      rows.flatMap((r) => [
        [`vacuum ${r.relname}`, r.vacuums],
        [`analyze ${r.relname}`, r.analyzes],
      ]),
    );
  };

  /** Both answers (in process and over HTTP) against the raw aggregation, then timed, interleaved with the raw baseline. */
  async function measurePhase(phase: string, rawRuns: number) {
    const tiered = await queryShareSeries(hub.id, shareIds, window);
    const raw = await rawSparklines(hub.id, shareIds, window);
    if (!isDeepStrictEqual(tiered, raw)) throw new Error(`${phase}: the tiered sparklines differ from the raw aggregation`);
    const http = await call('GET', `${h}/sparklines?duration=P1D`);
    if (http.status !== 200 || http.json.sparklines.length !== SHARES) throw new Error(`GET sparklines: ${http.status} ${http.text.slice(0, 200)}`);
    const httpSamples = new Map<string, UsagePoint[]>(http.json.sparklines.map((s: { id: string; samples: UsagePoint[] }) => [s.id, s.samples]));
    if (!isDeepStrictEqual(httpSamples, raw)) throw new Error(`${phase}: the HTTP sparklines differ from the raw aggregation`);
    const total = [...raw.values()].flat().reduce((sum, p) => sum + p.rx, 0);
    console.log(
      `\n${phase}: answers agree: ${SHARES} sparklines x ${window.points} points (step ${window.stepMs / 60_000} min), rx total ${total.toLocaleString('en')}`,
    );
    for (let i = 0; i < 3; i++) await sparklinesOverHttp();
    const maintenanceBefore = await maintenance();
    const viaHttp = timings();
    const viaTiers = timings();
    const viaRaw = timings();
    const perRound = Math.ceil(ITERATIONS / Math.max(1, rawRuns));
    for (let round = 0; round < Math.max(1, rawRuns); round++) {
      for (let i = 0; i < perRound; i++) {
        await timeOnce(viaHttp, sparklinesOverHttp);
        await timeOnce(viaTiers, () => queryShareSeries(hub.id, shareIds, window));
      }
      if (rawRuns > 0) await timeOnce(viaRaw, () => rawSparklines(hub.id, shareIds, window));
    }
    const [httpT, tiersT] = [summary(viaHttp), summary(viaTiers)];
    const maintenanceAfter = await maintenance();
    const ranMeanwhile = Object.keys(maintenanceAfter).filter((k) => maintenanceAfter[k] !== maintenanceBefore[k]);
    console.log(`  PostgreSQL's autovacuum during the measurement: ${ranMeanwhile.length ? ranMeanwhile.join(', ') : 'none'}`);
    console.log(
      `  GET H/sparklines?duration=P1D over HTTP (${viaHttp.times.length} runs): p50 ${ms(httpT.p50)}, p95 ${ms(httpT.p95)}  (target p95 < 50 ms: ${httpT.p95 < 50 ? 'met' : 'NOT met'})`,
    );
    console.log(`  tiered query in process (${viaTiers.times.length} runs):           p50 ${ms(tiersT.p50)}, p95 ${ms(tiersT.p95)}`);
    if (rawRuns > 0) {
      const rawT = summary(viaRaw);
      console.log(`  baseline: raw-table aggregation (${viaRaw.times.length} runs):    p50 ${ms(rawT.p50)}, p95 ${ms(rawT.p95)}`);
      console.log(
        `  ratio raw/tiered at p95 = ${(rawT.p95 / tiersT.p95).toFixed(1)}x in process, ${(rawT.p95 / httpT.p95).toFixed(1)}x over HTTP (target >= 20x)`,
      );
    }
  }

  // right after the backfill: no roll-up, no VACUUM or ANALYZE (autovacuum may or may not have come by)
  await measurePhase('right after the one-shot backfill (no roll-up)', 2);

  const rollStarted = performance.now();
  const rolled = await rollUp();
  await db().query('VACUUM ANALYZE usage_samples, usage_minutes, usage_hours');
  console.log(
    `\nroll-up (into the minute buckets; the hour buckets were written at ingestion): ${rolled.samples.toLocaleString('en')} samples, ${rolled.minuteBuckets.toLocaleString('en')} minute and ${rolled.hourBuckets.toLocaleString('en')} hour bucket upserts, ${((performance.now() - rollStarted) / 1000).toFixed(1)} s with VACUUM ANALYZE`,
  );
  await measurePhase('after the roll-up', RAW_ITERATIONS);

  // CPU time per answer does not depend on what else runs on the machine: with the cores to itself, one answer
  // takes about its CPU time (the API and PostgreSQL work one after the other).
  const cpuPerRun = async (runs: number, run: () => Promise<unknown>) => {
    const before = { api: cpuMs(api.pid), postgres: postgresCpuMs(pgDir), bench: process.cpuUsage() };
    for (let i = 0; i < runs; i++) await run();
    const bench = process.cpuUsage(before.bench);
    return {
      api: (cpuMs(api.pid) - before.api) / runs,
      postgres: (postgresCpuMs(pgDir) - before.postgres) / runs,
      bench: (bench.user + bench.system) / 1000 / runs,
    };
  };
  const httpCpu = await cpuPerRun(ITERATIONS, sparklinesOverHttp);
  const tiersCpu = await cpuPerRun(ITERATIONS, () => queryShareSeries(hub.id, shareIds, window));
  const rawCpu = await cpuPerRun(Math.min(RAW_ITERATIONS, 5), () => rawSparklines(hub.id, shareIds, window));
  const serviceMs = httpCpu.api + httpCpu.postgres;
  const tieredMs = tiersCpu.bench + tiersCpu.postgres;
  const rawMs = rawCpu.bench + rawCpu.postgres;
  console.log(
    `\nCPU per answer: HTTP ${ms(serviceMs)} (API ${ms(httpCpu.api)} + PostgreSQL ${ms(httpCpu.postgres)}; client ${ms(httpCpu.bench)}), tiered in process ${ms(tieredMs)}, raw aggregation ${ms(rawMs)} (PostgreSQL ${ms(rawCpu.postgres)})`,
  );
  console.log(`ratio raw/tiered by CPU = ${(rawMs / tieredMs).toFixed(1)}x in process, ${(rawMs / serviceMs).toFixed(1)}x against the whole HTTP answer`);
} finally {
  await ws.cleanUp();
}
process.exit(0);
