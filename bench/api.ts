/**
 * API hot paths against the limit of the machine, in one run (autocannon):
 *
 *   (a) the service's authenticated GET H/certificate-request-tokens/{id} at 50 connections,
 *   (b) its authenticated POST H/certificate-request-tokens at 20 connections (a new name each),
 *   (c) the limit: a bare node:http + pg server (bench/api-baseline.ts) doing the same SQL work against the same
 *       PostgreSQL: the one SELECT; BEGIN / INSERT token / INSERT name / COMMIT (and, for information, the two
 *       inserts as one autocommitted statement).
 *
 * Prints requests/s, p99 and the ratio service/limit, and the CPU each process spent per request. Rounds alternate
 * service and limit so both see the same machine. Targets: read >= 0.4 of its limit (issue 26: the API back on its libraries) with p99 < 20 ms; create >= 0.5
 * of the BEGIN/INSERT/COMMIT limit; zero non-2xx.
 *
 *   npm run bench:api      (BENCH_DURATION seconds per measurement, default 10; BENCH_ROUNDS, default 2;
 *                           BENCH_PROFILE=<dir> writes a CPU profile of the API process; LOG_LEVEL, default info)
 *
 * Starts its own embedded PostgreSQL, redis-server, API process and baseline process, and stops them.
 */
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import type { ChildProcess } from 'node:child_process';
import { benchWorkspace, cpuMs, freePort, jsonClient, median, postgresCpuMs, startProcess, startServices, waitUntilHealthy } from './harness.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const READ_CONNECTIONS = 50;
const CREATE_CONNECTIONS = 20;

const ws = benchWorkspace({ budgetMs: 15 * 60_000 });

interface Measured {
  rps: number;
  p99: number;
  non2xx: number;
  errors: number;
  cpuPerRequest: { server: number; postgres: number };
}

let names = 0;

try {
  const services = await startServices(ws);
  const { databaseUrl, redisUrl } = services;
  const adminToken = 'bench-admin-token-0123456789';

  const apiPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const api = startProcess(ws, 'api/server.ts', {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    HUB_ADMIN_TOKEN: adminToken,
    HUB_DATA_DIR: path.join(ws.work, 'data'),
    PORT: String(apiPort),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    HUB_PROCESS: 'web',
  });
  await waitUntilHealthy(apiUrl, api);
  const admin = jsonClient(apiUrl, `Bearer ${adminToken}`);
  const hub = (await admin('POST', '/admin/v1/hubs', { name: 'bench' })).json;
  const key = (await admin('POST', `/admin/v1/hubs/${hub.id}/api-keys`, { name: 'bench' })).json;
  const authorization = `Bearer ${key.token}`;
  const call = jsonClient(apiUrl, authorization);
  const token = await call('POST', `/hub/${hub.id}/certificate-request-tokens`, { name: 'read-me' });
  if (token.status !== 201) throw new Error(`creating a token failed: ${token.status} ${token.text}`);

  // the limit: same PostgreSQL, same pool size, its own process like the API
  const basePort = await freePort();
  const baseUrl = `http://127.0.0.1:${basePort}`;
  const baseline = startProcess(ws, 'bench/api-baseline.ts', { ...process.env, DATABASE_URL: databaseUrl, PORT: String(basePort), BASELINE_HUB_ID: hub.id, BENCH_PROFILE: '' });
  await waitUntilHealthy(baseUrl, baseline);
  const baseCreated = await fetch(`${baseUrl}/tokens`, { method: 'POST', body: JSON.stringify({ name: 'baseline-read-me' }) });
  const baseToken = await baseCreated.json();
  if (baseCreated.status !== 201) throw new Error(`the baseline could not create its token: ${baseCreated.status} ${JSON.stringify(baseToken)}`);

  const json = { 'content-type': 'application/json', accept: 'application/json' };
  const newName = () => JSON.stringify({ name: `n-${process.pid}-${names++}` });

  const scenarios = {
    serviceRead: { url: `${apiUrl}/hub/${hub.id}/certificate-request-tokens/${token.json.id}`, connections: READ_CONNECTIONS, headers: { authorization, accept: 'application/json' }, process: api },
    limitRead: { url: `${baseUrl}/tokens/${baseToken.id}`, connections: READ_CONNECTIONS, headers: { accept: 'application/json' }, process: baseline },
    serviceCreate: { url: `${apiUrl}/hub/${hub.id}/certificate-request-tokens`, connections: CREATE_CONNECTIONS, method: 'POST', headers: { authorization, ...json }, process: api },
    limitCreate: { url: `${baseUrl}/tokens`, connections: CREATE_CONNECTIONS, method: 'POST', headers: json, process: baseline },
    limitCreateOneStatement: { url: `${baseUrl}/tokens/one`, connections: CREATE_CONNECTIONS, method: 'POST', headers: json, process: baseline },
  } as const;
  type Name = keyof typeof scenarios;
  // BENCH_SCENARIOS=serviceRead,limitRead runs only those (e.g. for a profile of one path)
  const only = process.env.BENCH_SCENARIOS?.split(',').filter(Boolean);
  const selected = (Object.keys(scenarios) as Name[]).filter((n) => !only || only.includes(n));

  // Statistics as autovacuum would have them: the creates grow the table by thousands of rows a second, faster than
  // autovacuum's one-minute nap here, and a prepared statement's generic plan made on a small table (a sequential
  // scan) stays until an ANALYZE invalidates it. Analyzed before every measurement, outside the timed window.
  const pgClient = new pg.Client({ connectionString: databaseUrl });
  await pgClient.connect();
  ws.onCleanup(() => pgClient.end());

  async function measure(name: Name, seconds: number): Promise<Measured> {
    await pgClient.query('ANALYZE certificate_request_tokens, pki_names, api_keys, hubs');
    const s = scenarios[name] as { url: string; connections: number; method?: 'POST'; headers: Record<string, string>; process: ChildProcess };
    const cpuBefore = { server: cpuMs(s.process.pid), postgres: postgresCpuMs(services.postgresDataDir) };
    const result = await autocannon({
      url: s.url,
      connections: s.connections,
      duration: seconds,
      method: s.method ?? 'GET',
      headers: s.headers,
      requests: s.method === 'POST' ? [{ setupRequest: (req) => ({ ...req, body: newName() }) }] : undefined,
    });
    const done = result.requests.total;
    return {
      rps: done / result.duration,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
      cpuPerRequest: {
        server: (cpuMs(s.process.pid) - cpuBefore.server) / done,
        postgres: (postgresCpuMs(services.postgresDataDir) - cpuBefore.postgres) / done,
      },
    };
  }

  console.log(`bench:api: ${ROUNDS} round(s) of ${DURATION} s per measurement; read at ${READ_CONNECTIONS} connections, create at ${CREATE_CONNECTIONS}`);
  for (const name of selected) await measure(name, 2); // warm-up: JIT, pools, prepared statements

  const results: Record<Name, Measured[]> = { serviceRead: [], limitRead: [], serviceCreate: [], limitCreate: [], limitCreateOneStatement: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of selected) {
      const m = await measure(name, DURATION);
      results[name].push(m);
      console.log(
        `  round ${round} ${name.padEnd(24)} ${Math.round(m.rps).toLocaleString('en').padStart(7)} req/s  p99 ${String(m.p99).padStart(3)} ms  ` +
          `non-2xx ${m.non2xx}  errors ${m.errors}  CPU ms/req: server ${m.cpuPerRequest.server.toFixed(3)}, PostgreSQL ${m.cpuPerRequest.postgres.toFixed(3)}`,
      );
    }
  }

  const rps = (name: Name) => (results[name].length ? median(results[name].map((m) => m.rps)) : NaN);
  const p99 = (name: Name) => (results[name].length ? Math.max(...results[name].map((m) => m.p99)) : NaN);
  // a ratio per round (its two sides measured one after the other), then their median: each side's own median may
  // come from different rounds, i.e. from different moments of a shared machine
  const roundRatios = (service: Name, limit: Name) => results[service].map((m, i) => m.rps / (results[limit][i]?.rps ?? NaN));
  const bad = (Object.keys(results) as Name[]).reduce((n, k) => n + results[k].reduce((a, m) => a + m.non2xx + m.errors, 0), 0);
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const listed = (xs: number[]) => xs.map((x) => x.toFixed(3)).join(', ');
  console.log(`\nreq/s: median of ${ROUNDS} round(s); p99: the worst round's; ratio: the median of the rounds' ratios`);
  if (results.serviceRead.length && results.limitRead.length) {
    const ratios = roundRatios('serviceRead', 'limitRead');
    const readRatio = median(ratios);
    console.log(`read:   service ${Math.round(rps('serviceRead')).toLocaleString('en')} req/s p99 ${p99('serviceRead')} ms; limit (node:http + pg SELECT) ${Math.round(rps('limitRead')).toLocaleString('en')} req/s p99 ${p99('limitRead')} ms`);
    console.log(`        ratio service/limit = ${readRatio.toFixed(3)} (rounds: ${listed(ratios)})  (target >= 0.4: ${verdict(readRatio >= 0.4)}; p99 < 20 ms: ${verdict(p99('serviceRead') < 20)})`);
  }
  if (results.serviceCreate.length && results.limitCreate.length) {
    const ratios = roundRatios('serviceCreate', 'limitCreate');
    const createRatio = median(ratios);
    console.log(`create: service ${Math.round(rps('serviceCreate')).toLocaleString('en')} req/s p99 ${p99('serviceCreate')} ms; limit (BEGIN/INSERT/INSERT/COMMIT) ${Math.round(rps('limitCreate')).toLocaleString('en')} req/s p99 ${p99('limitCreate')} ms; one autocommitted statement ${Math.round(rps('limitCreateOneStatement')).toLocaleString('en')} req/s`);
    console.log(`        ratio service/limit = ${createRatio.toFixed(3)} (rounds: ${listed(ratios)})  (target >= 0.5: ${verdict(createRatio >= 0.5)}); service/one-statement = ${(rps('serviceCreate') / rps('limitCreateOneStatement')).toFixed(2)}`);
  }
  console.log(`non-2xx and errors in all measurements: ${bad} (target 0: ${verdict(bad === 0)})`);
} finally {
  await ws.cleanUp();
}
process.exit(0);
