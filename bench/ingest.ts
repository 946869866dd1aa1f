/**
 * Usage ingestion throughput: POST /admin/v1/usage through the real API process (JSON parsing, per-sample
 * validation, hub/share/environment look-ups, one-statement insert) against a baseline measured in the same run:
 * the same rows written by a plain multi-row INSERT ... VALUES over a pg pool, with the same batch size and
 * concurrency, into the same table. Targets: >= 50k samples/s and >= 0.5 of the baseline. Prints the CPU the API
 * process, PostgreSQL and the bench process (the client of both) spent per sample on each path.
 *
 *   node --import tsx bench/ingest.ts            (BENCH_SAMPLES, BENCH_BATCH, BENCH_CONCURRENCY, BENCH_ROUNDS)
 *
 * Starts its own embedded PostgreSQL, redis-server and API process, and stops them.
 */
import path from 'node:path';
import pg from 'pg';
import {
  benchWorkspace,
  cpuMeter,
  describeCpu,
  freePort,
  jsonClient,
  median,
  postgresCpuMs,
  schedCpuMs,
  startProcess,
  startServices,
  timed,
  waitUntilHealthy,
} from './harness.js';

const TOTAL = Number(process.env.BENCH_SAMPLES ?? 200_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 5_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SHARES = 100;
const ENVIRONMENTS = 10;

const ws = benchWorkspace({ budgetMs: 10 * 60_000 });

try {
  const services = await startServices(ws);
  const { databaseUrl, redisUrl } = services;

  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const adminToken = 'bench-admin-token-0123456789';
  const apiProcess = startProcess(ws, 'api/server.ts', {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    HUB_ADMIN_TOKEN: adminToken,
    HUB_DATA_DIR: path.join(ws.work, 'data'),
    PORT: String(port),
    LOG_LEVEL: 'silent',
    HUB_PROCESS: 'web',
  });
  await waitUntilHealthy(baseUrl, apiProcess);
  const call = jsonClient(baseUrl, `Bearer ${adminToken}`);

  // a hub with environments and shares, created through the API
  const hub = (await call('POST', '/admin/v1/hubs', { name: 'bench' })).json;
  const h = `/hub/${hub.id}`;
  const envs: string[] = [];
  for (let i = 0; i < ENVIRONMENTS; i++) envs.push((await call('POST', `${h}/environments`, { description: `agent ${i}` })).json.envZId);
  const frontendId = (await call('GET', `${h}/frontends`)).json[0].id;
  const shares: { zId: string; envZId: string }[] = [];
  for (let i = 0; i < SHARES; i++) {
    const r = await call('POST', `${h}/shares`, {
      name: `share-${i}`,
      frontendIds: [frontendId],
      target: 'http://10.0.0.5:8080',
      envZId: envs[i % ENVIRONMENTS],
    });
    if (r.status !== 201) throw new Error(`creating a share failed: ${r.status} ${r.text}`);
    shares.push({ zId: r.json.zId, envZId: envs[i % ENVIRONMENTS] });
  }

  // the samples: 4 in 5 name a share (its environment is inferred), the rest an environment only; the last day
  const now = Date.now();
  const samples = Array.from({ length: TOTAL }, (_, i) => {
    const timestamp = new Date(now - ((i * 7919) % 86_400_000)).toISOString();
    const share = shares[i % SHARES];
    return i % 5 === 4
      ? { hubId: hub.id, envZId: envs[i % ENVIRONMENTS], rx: (i * 31) % 100_000, tx: (i * 17) % 10_000, timestamp }
      : { hubId: hub.id, shareId: share.zId, rx: (i * 31) % 100_000, tx: (i * 17) % 10_000, timestamp };
  });
  const batches = Array.from({ length: Math.ceil(TOTAL / BATCH) }, (_, b) => samples.slice(b * BATCH, (b + 1) * BATCH));
  const bodies = batches.map((batch) => JSON.stringify({ samples: batch }));
  // the same rows as stored (the environment of a share sample filled in), as INSERT parameters
  const envOfShare = new Map(shares.map((s) => [s.zId, s.envZId]));
  const inserts = batches.map((batch) => {
    const values: unknown[] = [];
    const tuples = batch.map((s, i) => {
      const shareId = 'shareId' in s ? s.shareId : null;
      values.push(s.hubId, shareId, shareId ? envOfShare.get(shareId) : s.envZId, s.timestamp, s.rx, s.tx);
      const p = i * 6;
      return `($${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5}, $${p + 6})`;
    });
    return { text: `INSERT INTO usage_samples (hub_id, share_id, env_z_id, ts, rx, tx) VALUES ${tuples.join(', ')}`, values };
  });

  const pool = new pg.Pool({ connectionString: databaseUrl, max: CONCURRENCY });
  ws.onCleanup(() => pool.end());
  const count = async () => Number((await pool.query('SELECT count(*) AS n FROM usage_samples')).rows[0].n);

  const viaApi = async () =>
    timed(bodies.length, CONCURRENCY, async (b) => {
      const r = await call('POST', '/admin/v1/usage', bodies[b]);
      if (r.status !== 202 || r.json.accepted !== batches[b].length) throw new Error(`ingest failed: ${r.status} ${r.text.slice(0, 300)}`);
    });
  const viaRawInsert = async () =>
    timed(inserts.length, CONCURRENCY, async (b) => {
      await pool.query(inserts[b]);
    });

  console.log(
    `ingest: ${TOTAL} samples in batches of ${BATCH}, ${CONCURRENCY} at once, ${ROUNDS} rounds, largest body ${Math.max(...bodies.map((b) => b.length))} bytes`,
  );
  const api: number[] = [];
  const raw: number[] = [];
  // the bench process is the raw path's client (and the API's)
  const meter = cpuMeter({
    api: () => schedCpuMs(apiProcess.pid),
    postgres: () => postgresCpuMs(services.postgresDataDir),
    bench: () => schedCpuMs(process.pid),
  });
  const cpu: Record<'api' | 'raw', Record<string, number>[]> = { api: [], raw: [] };
  // warm-up of both paths, then alternate so that neither always runs on a fresher table or a warmer cache
  await pool.query('TRUNCATE usage_samples');
  await call('POST', '/admin/v1/usage', bodies[0]);
  await pool.query(inserts[0]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run, into] of [
      ['api', viaApi, api],
      ['raw', viaRawInsert, raw],
    ] as const) {
      await pool.query('TRUNCATE usage_samples');
      await pool.query('CHECKPOINT');
      const m = meter.start();
      const ms = await run();
      cpu[name].push(m.per(TOTAL));
      const stored = await count();
      if (stored !== TOTAL) throw new Error(`${name}: ${stored} rows stored, expected ${TOTAL}`);
      into.push((TOTAL / ms) * 1000);
      console.log(
        `  round ${round + 1} ${name === 'api' ? 'POST /admin/v1/usage' : 'raw INSERT VALUES  '}: ${Math.round((TOTAL / ms) * 1000).toLocaleString('en')} samples/s (${ms.toFixed(0)} ms)`,
      );
    }
  }
  const apiRate = median(api);
  const rawRate = median(raw);
  const ratio = apiRate / rawRate;
  console.log(
    `\ningestion (median): ${Math.round(apiRate).toLocaleString('en')} samples/s; baseline raw multi-row INSERT: ${Math.round(rawRate).toLocaleString('en')} samples/s`,
  );
  console.log(`POST /admin/v1/usage ${describeCpu(cpu.api, 'sample')}; raw INSERT ${describeCpu(cpu.raw, 'sample')}`);
  console.log(
    `ratio ingestion/raw = ${ratio.toFixed(2)}  (target >= 0.5: ${ratio >= 0.5 ? 'met' : 'NOT met'}; >= 50k samples/s: ${apiRate >= 50_000 ? 'met' : 'NOT met'})`,
  );
} finally {
  await ws.cleanUp();
}
process.exit(0);
