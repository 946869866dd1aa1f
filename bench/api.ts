/**
 * API hot paths against the limit of the machine, measured as a user meets them (autocannon):
 *
 *   read:   the authenticated GET H/certificate-request-tokens/{id} at BENCH_CONNECTIONS connections (default 50),
 *   create: the authenticated POST H/certificate-request-tokens at 20 connections (a new name each),
 *   limit:  a bare node:http + pg server (bench/api-baseline.ts) doing the same SQL against the same PostgreSQL: the
 *           one SELECT; BEGIN / INSERT token / INSERT name / COMMIT (and, for information, the two inserts as one
 *           autocommitted statement).
 *
 * Each round starts a fresh API process (as `npm start` runs the web process: compiled, `node api/server.js`) and
 * a fresh limit process, then measures on both, alternating: the first BENCH_COLD reads and creates after start
 * (cold: JIT, pools, prepared statements and their plans all made now), then BENCH_DURATION seconds of each (warm).
 * One hub, created fresh for the run, grows through all of it; nothing runs ANALYZE (a table growing from empty is
 * what a deployment meets, and a plan cached while it was empty stays). Prints requests/s, p99, the CPU each
 * process spent per request (the server process's, PostgreSQL's and the load generator's), how often per request the
 * server's main thread slept and was preempted, the share of a core the server got (req/s x its CPU per request: on a
 * shared machine this share, not the code, moves between rounds), and the ratio service/limit of each round.
 * Targets: read >= 0.5 of its limit with p99 < 30 ms at 50 connections; create >= 0.5 of the BEGIN/INSERT/COMMIT limit;
 * zero non-2xx.
 *
 *   npm run bench:api      (BENCH_DURATION s per warm measurement, default 10; BENCH_COLD requests per cold one,
 *                           default 2000; BENCH_ROUNDS, default 2; BENCH_SCENARIOS=read,create to run one; LOG_LEVEL,
 *                           default info; BENCH_CONNECTIONS, the reads' connections, default 50; BENCH_PROFILE=<dir>
 *                           writes CPU profiles of the processes)
 */
import os from 'node:os';
import pg from 'pg';
import type { ChildProcess } from 'node:child_process';
import {
  benchWorkspace,
  contextSwitches,
  cpuMs,
  freePort,
  jsonClient,
  loadTest,
  median,
  postgresCpuMs,
  startProcess,
  startServices,
  stopChild,
  waitUntilHealthy,
  webEnv,
} from './harness.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const COLD = Number(process.env.BENCH_COLD ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'read,create').split(',');
/** The loads the floors are set at: reads at 50 connections (BENCH_CONNECTIONS), creates at 20. */
const CONNECTIONS = { read: Number(process.env.BENCH_CONNECTIONS ?? 50), create: 20 } as const;

const ws = benchWorkspace({ budgetMs: 20 * 60_000 });

interface Measured {
  rps: number;
  p99: number;
  bad: number;
  /** CPU µs per request: the server process, PostgreSQL, the load generator (autocannon, in this process) */
  server: number;
  postgres: number;
  client: number;
  /** the server's main thread per request: times it slept (nothing to do: its event loop waited), times it was preempted */
  sleeps: number;
  preempted: number;
}

let names = 0;

try {
  const services = await startServices(ws);
  const adminToken = 'bench-admin-token-0123456789';
  const apiEnv = (port: number) => webEnv(ws, services, port, adminToken);

  // the hub, its key and the token to read are made by a process of their own, so the measured ones start cold
  const setupPort = await freePort();
  const setup = startProcess(ws, 'api/server.ts', { ...apiEnv(setupPort), BENCH_PROFILE: '' });
  const setupUrl = `http://127.0.0.1:${setupPort}`;
  await waitUntilHealthy(setupUrl, setup);
  const admin = jsonClient(setupUrl, `Bearer ${adminToken}`);
  const hub = (await admin('POST', '/admin/v1/hubs', { name: 'bench' })).json;
  const key = (await admin('POST', `/admin/v1/hubs/${hub.id}/api-keys`, { name: 'bench' })).json;
  const authorization = `Bearer ${key.token}`;
  const token = await jsonClient(setupUrl, authorization)('POST', `/hub/${hub.id}/certificate-request-tokens`, { name: 'read-me' });
  if (token.status !== 201) throw new Error(`creating a token failed: ${token.status} ${token.text}`);
  await stopChild(setup);

  const json = { 'content-type': 'application/json', accept: 'application/json' };
  const newName = () => JSON.stringify({ name: `n-${process.pid}-${names++}` });

  async function startSides() {
    const apiPort = await freePort();
    const api = startProcess(ws, 'api/server.ts', apiEnv(apiPort));
    const basePort = await freePort();
    const limit = startProcess(ws, 'bench/api-baseline.ts', {
      ...process.env,
      DATABASE_URL: services.databaseUrl,
      PORT: String(basePort),
      BASELINE_HUB_ID: hub.id,
      BASELINE_SECRET_KEY: '22'.repeat(32),
    });
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const baseUrl = `http://127.0.0.1:${basePort}`;
    await waitUntilHealthy(apiUrl, api);
    await waitUntilHealthy(baseUrl, limit);
    return { api, apiUrl, limit, baseUrl };
  }

  // the limit's token to read: made once by a throw-away limit process
  let baseTokenId: string;
  {
    const s = await startSides();
    const created = await fetch(`${s.baseUrl}/tokens`, { method: 'POST', body: JSON.stringify({ name: 'baseline-read-me' }) });
    const body = await created.json();
    if (created.status !== 201) throw new Error(`the baseline could not create its token: ${created.status} ${JSON.stringify(body)}`);
    baseTokenId = body.id;
    await Promise.all([stopChild(s.api), stopChild(s.limit)]);
  }

  type Sides = Awaited<ReturnType<typeof startSides>>;
  const targets = (s: Sides) => ({
    serviceRead: {
      url: `${s.apiUrl}/hub/${hub.id}/certificate-request-tokens/${token.json.id}`,
      connections: CONNECTIONS.read,
      headers: { authorization, accept: 'application/json' },
      process: s.api,
    },
    limitRead: { url: `${s.baseUrl}/tokens/${baseTokenId}`, connections: CONNECTIONS.read, headers: { accept: 'application/json' }, process: s.limit },
    serviceCreate: {
      url: `${s.apiUrl}/hub/${hub.id}/certificate-request-tokens`,
      connections: CONNECTIONS.create,
      method: 'POST' as const,
      headers: { authorization, ...json },
      process: s.api,
    },
    limitCreate: { url: `${s.baseUrl}/tokens`, connections: CONNECTIONS.create, method: 'POST' as const, headers: json, process: s.limit },
    limitCreateOneStatement: { url: `${s.baseUrl}/tokens/one`, connections: CONNECTIONS.create, method: 'POST' as const, headers: json, process: s.limit },
  });
  type Name = keyof ReturnType<typeof targets>;

  async function measure(
    target: { url: string; connections: number; method?: 'POST'; headers: Record<string, string>; process: ChildProcess },
    load: { amount: number } | { duration: number },
  ): Promise<Measured> {
    const cpuBefore = { server: cpuMs(target.process.pid), postgres: postgresCpuMs(services.postgresDataDir), client: process.cpuUsage() };
    const switchesBefore = contextSwitches(target.process.pid);
    const result = await loadTest({
      url: target.url,
      connections: target.connections,
      ...load,
      method: target.method ?? 'GET',
      headers: target.headers,
      requests: target.method === 'POST' ? [{ setupRequest: (req) => ({ ...req, body: newName() }) }] : undefined,
    });
    const done = result.requests.total;
    const client = process.cpuUsage(cpuBefore.client);
    const switches = contextSwitches(target.process.pid);
    return {
      rps: result.rps,
      p99: result.latency.p99,
      bad: result.non2xx + result.errors + result.timeouts,
      server: ((cpuMs(target.process.pid) - cpuBefore.server) * 1000) / done,
      postgres: ((postgresCpuMs(services.postgresDataDir) - cpuBefore.postgres) * 1000) / done,
      client: (client.user + client.system) / done,
      sleeps: (switches.voluntary - switchesBefore.voluntary) / done,
      preempted: (switches.involuntary - switchesBefore.involuntary) / done,
    };
  }

  const db = new pg.Client({ connectionString: services.databaseUrl });
  await db.connect();
  ws.onCleanup(() => db.end());
  const tokensOfHub = async () => Number((await db.query('SELECT count(*) FROM certificate_request_tokens WHERE hub_id = $1', [hub.id])).rows[0].count);

  type Phase = 'cold' | 'warm';
  const results: Record<Phase, Partial<Record<Name, Measured[]>>> = { cold: {}, warm: {} };
  const record = (phase: Phase, name: Name, m: Measured, round: number) => {
    (results[phase][name] ??= []).push(m);
    console.log(
      `  round ${round} ${phase} ${name.padEnd(24)} ${Math.round(m.rps).toLocaleString('en').padStart(7)} req/s  p99 ${String(m.p99).padStart(3)} ms  ` +
        `non-2xx/errors ${m.bad}  CPU µs/req: server ${m.server.toFixed(0)}, PostgreSQL ${m.postgres.toFixed(0)}, client ${m.client.toFixed(0)}; ` +
        `server's main thread per req: slept ${m.sleeps.toFixed(2)}, preempted ${m.preempted.toFixed(2)}; the server had ${((m.rps * m.server) / 1e6).toFixed(2)} of a core`,
    );
  };
  const pairs: [Name, Name][] = [];
  if (SCENARIOS.includes('read')) pairs.push(['serviceRead', 'limitRead']);
  if (SCENARIOS.includes('create')) pairs.push(['serviceCreate', 'limitCreate']);

  console.log(
    `bench:api: ${ROUNDS} round(s), each on fresh processes: the first ${COLD} requests (cold), then ${DURATION} s (warm); read at ${CONNECTIONS.read} connections, create at ${CONNECTIONS.create}; load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  for (let round = 1; round <= ROUNDS; round++) {
    const sides = await startSides();
    const t = targets(sides);
    // cold: the first requests each fresh process serves, the service's and the limit's one after the other
    for (const [service, limit] of pairs) {
      const order = round % 2 ? [service, limit] : [limit, service];
      for (const name of order) record('cold', name, await measure(t[name], { amount: COLD }), round);
    }
    for (const [service, limit] of pairs) {
      const order = round % 2 ? [service, limit] : [limit, service];
      for (const name of order) record('warm', name, await measure(t[name], { duration: DURATION }), round);
    }
    if (SCENARIOS.includes('create') && round === ROUNDS)
      record('warm', 'limitCreateOneStatement', await measure(t.limitCreateOneStatement, { duration: DURATION }), round);
    await Promise.all([stopChild(sides.api), stopChild(sides.limit)]);
    console.log(`  (the hub has ${(await tokensOfHub()).toLocaleString('en')} tokens; load average ${os.loadavg()[0].toFixed(1)})`);
  }

  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const listed = (xs: number[]) => xs.map((x) => x.toFixed(3)).join(', ');
  let bad = 0;
  console.log(
    `\nper phase: req/s and CPU µs per request of the server process, medians of the rounds; p99 the worst round's; ratio service/limit per round (req/s), then their median`,
  );
  for (const phase of ['cold', 'warm'] as const) {
    for (const [service, limit] of pairs) {
      const s = results[phase][service] ?? [];
      const l = results[phase][limit] ?? [];
      bad += [...s, ...l].reduce((n, m) => n + m.bad, 0);
      const ratios = s.map((m, i) => m.rps / (l[i]?.rps ?? NaN));
      const cpuRatios = s.map((m, i) => (l[i]?.server ?? NaN) / m.server);
      const ratio = median(ratios);
      const p99 = Math.max(...s.map((m) => m.p99));
      const what = service === 'serviceRead' ? 'read  ' : 'create';
      const target =
        service === 'serviceRead' ? `target >= 0.5: ${verdict(ratio >= 0.5)}; p99 < 30 ms: ${verdict(p99 < 30)}` : `target >= 0.5: ${verdict(ratio >= 0.5)}`;
      console.log(
        `${phase} ${what}: service ${Math.round(median(s.map((m) => m.rps))).toLocaleString('en')} req/s p99 ${p99} ms, ${median(s.map((m) => m.server)).toFixed(0)} µs CPU/req; ` +
          `limit ${Math.round(median(l.map((m) => m.rps))).toLocaleString('en')} req/s p99 ${Math.max(...l.map((m) => m.p99))} ms, ${median(l.map((m) => m.server)).toFixed(0)} µs CPU/req`,
      );
      console.log(`            ratio ${ratio.toFixed(3)} (rounds ${listed(ratios)}); CPU ratio limit/service ${median(cpuRatios).toFixed(3)}  (${target})`);
    }
  }
  const one = results.warm.limitCreateOneStatement?.[0];
  if (one) console.log(`for information: the limit's two inserts as one autocommitted statement ${Math.round(one.rps).toLocaleString('en')} req/s`);
  console.log(
    `non-2xx and errors in all measurements: ${bad} (target 0: ${verdict(bad === 0)}); load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
} finally {
  await ws.cleanUp();
}
process.exit(0);
