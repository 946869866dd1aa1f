/**
 * bench:edge-inspect: the edge with request inspection on for a share against the same edge with it off (and nginx as
 * the reference), in the same run; see bench/README.md. BENCH_INSPECT_AB=<checkout> also starts that checkout's edge
 * (another worktree, e.g. main) beside this one, on the same services, shares and secret key, and compares both edges' CPU per
 * request, inspect off and on, and Redis's per inspected exchange, in alternating rounds of the same run.
 */
import http from 'node:http';
import path from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ensureCommands } from '../scripts/services/index.js';
import {
  benchShares,
  benchWorkspace,
  freePort,
  median,
  schedCpuMs,
  startEdgeProcess,
  startServices,
  startNginxProxy,
  startPlainBackend,
  stopChild,
  treeCpuMs,
} from './harness.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

ensureCommands([{ command: 'nginx', pkg: 'nginx', hint: 'Install it: `sudo apt-get install nginx`.' }]);
const ws = benchWorkspace({ budgetMs: 15 * 60_000 });
try {
  const services = await startServices(ws);

  // the backend: a plain node:http server in a process of its own, 128-byte answers
  const { port: backendPort, child: backend } = await startPlainBackend(ws);

  // a hub with one ACTIVE share on the public frontend, written directly (the bench measures the data plane)
  const db = new pg.Client({ connectionString: services.databaseUrl });
  db.on('error', () => undefined); // PostgreSQL stops at clean-up
  await db.connect();
  // the same share again with inspection on
  const {
    zIds: [zId],
    hosts: [host, inspectedHost],
  } = await benchShares(db, `http://127.0.0.1:${backendPort}`, [{ name: 'bench' }, { name: 'bench-inspected', inspect: true }]);
  const metricsPort = await freePort();

  // the edge, as the Procfile runs it
  const edgePort = await freePort();
  const edge = startEdgeProcess(ws, services, {
    HUB_EDGE_HTTP_PORT: String(edgePort),
    HUB_EDGE_HTTPS_PORT: '0',
    HUB_METRICS_PORT: String(metricsPort),
    LOG_LEVEL: 'warn',
  });

  // another checkout's edge, for a same-run A/B of the capture
  const abDir = process.env.BENCH_INSPECT_AB;
  const abPort = abDir ? await freePort() : 0;
  // started as npm start starts an edge (its collector's flags too), from that checkout
  const abEdge = abDir ? startEdgeProcess(ws, services, { HUB_EDGE_HTTP_PORT: String(abPort), HUB_EDGE_HTTPS_PORT: '0', LOG_LEVEL: 'warn' }, abDir) : undefined;

  // nginx, the reference: the same backend, the same forwarding headers
  const { port: nginxPort, child: nginx } = await startNginxProxy(ws, backendPort);

  const ready = async (port: number) => {
    for (let i = 0; i < 300; i++) {
      // node:http, not fetch: fetch does not let a caller set Host
      const status = await new Promise<number>((resolve) =>
        http.get({ host: '127.0.0.1', port, headers: { host } }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', () => resolve(0)),
      );
      if (status === 200) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`nothing answered 200 on ${port}`);
  };
  await Promise.all([ready(edgePort), ready(nginxPort), ...(abEdge ? [ready(abPort)] : [])]);
  if (edge.exitCode !== null) throw new Error('the edge exited');

  const load = (port: number, seconds: number, as = host, overallRate?: number) =>
    new Promise<autocannon.Result>((resolve, reject) =>
      autocannon(
        { url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration: seconds, headers: { host: as }, ...(overallRate ? { overallRate } : {}) },
        (err, result) => (err ? reject(err) : resolve(result)),
      ),
    );
  // warm both (JIT, pools), then alternate so that a noisy moment does not favour one
  await load(edgePort, 2);
  await load(nginxPort, 2);
  await load(edgePort, 2, inspectedHost);
  const results: Record<'edge' | 'nginx' | 'inspect', autocannon.Result[]> = { edge: [], nginx: [], inspect: [] };
  const cpuPerRequest: Record<'edge' | 'nginx' | 'backend', number[]> = { edge: [], nginx: [], backend: [] };
  const sysPerRequest: Record<'edge' | 'nginx', number[]> = { edge: [], nginx: [] };
  const inspectCpu: Record<'edge' | 'redis', number[]> = { edge: [], redis: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, port] of (round % 2
      ? [
          ['edge', edgePort],
          ['nginx', nginxPort],
        ]
      : [
          ['nginx', nginxPort],
          ['edge', edgePort],
        ]) as ['edge' | 'nginx', number][]) {
      const proxyPid = name === 'edge' ? edge.pid : nginx.pid;
      const before = { proxy: treeCpuMs(proxyPid), backend: schedCpuMs(backend.pid) };
      const r = await load(port, SECONDS);
      // a wrong answer is a failure; a handful of client time-outs on a loaded machine is reported, not fatal
      if (r.non2xx || r.errors > r.requests.total / 1000) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      if (r.errors) console.error(`${name}: ${r.errors} client errors (time-outs) of ${r.requests.total} requests`);
      results[name].push(r);
      const after = treeCpuMs(proxyPid);
      cpuPerRequest[name].push(((after.total - before.proxy.total) * 1000) / r.requests.total);
      sysPerRequest[name].push(((after.sys - before.proxy.sys) * 1000) / r.requests.total);
      if (name === 'edge') cpuPerRequest.backend.push(((schedCpuMs(backend.pid) - before.backend) * 1000) / r.requests.total);
    }
    // the inspected share, right after the edge's round with it off; the CPU it costs, the edge's and Redis's
    const before = { edge: treeCpuMs(edge.pid), redis: schedCpuMs(services.redisPid) };
    const r = await load(edgePort, SECONDS, inspectedHost);
    if (r.non2xx || r.errors > r.requests.total / 1000) throw new Error(`inspect: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
    results.inspect.push(r);
    const after = treeCpuMs(edge.pid);
    inspectCpu.edge.push(((after.total - before.edge.total) * 1000) / r.requests.total);
    inspectCpu.redis.push(((schedCpuMs(services.redisPid) - before.redis) * 1000) / r.requests.total);
  }
  const scrape = () => fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((res) => res.text());
  const countersOf = (text: string, name: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(name))
      .map((l) => `${/reason="([^"]+)"/.exec(l)?.[1] ?? 'total'} ${Number(l.trim().split(' ').pop())}`);
  const droppedIn = (text: string) => countersOf(text, 'edgehub_edge_inspect_dropped_total').reduce((n, l) => n + Number(l.split(' ')[1]), 0);
  // fixed offered rate: both shares at the same req/s, CPU per request and p99 compared, drops counted in these rounds
  const RATE = Number(process.env.BENCH_INSPECT_RATE ?? 4000);
  const fixed: Record<'off' | 'on', { rps: number[]; p99: number[]; cpu: number[] }> = {
    off: { rps: [], p99: [], cpu: [] },
    on: { rps: [], p99: [], cpu: [] },
  };
  const droppedBefore = droppedIn(await scrape());
  for (let round = 0; round < ROUNDS; round++) {
    for (const which of (round % 2 ? ['on', 'off'] : ['off', 'on']) as ('off' | 'on')[]) {
      const before = treeCpuMs(edge.pid);
      const r = await load(edgePort, SECONDS, which === 'on' ? inspectedHost : host, RATE);
      const after = treeCpuMs(edge.pid);
      fixed[which].rps.push(r.requests.average);
      fixed[which].p99.push(r.latency.p99);
      fixed[which].cpu.push(((after.total - before.total) * 1000) / r.requests.total);
    }
  }
  const inspectMetrics = await scrape();
  const droppedAtRate = droppedIn(inspectMetrics) - droppedBefore;
  const counter = (name: string) => countersOf(inspectMetrics, name);
  const rps = (name: 'edge' | 'nginx' | 'inspect') => median(results[name].map((r) => r.requests.average));
  const p99 = (name: 'edge' | 'nginx' | 'inspect') => median(results[name].map((r) => r.latency.p99));
  const edgeBytes = results.edge.reduce((n, r) => n + r.throughput.total, 0);

  // Redis's own account of the inspected rounds: calls and µs per call of each command
  const redis = new Redis(services.redisUrl);
  const commandStats = (await redis.info('commandstats'))
    .split('\n')
    .filter((l) => /^cmdstat_(evalsha|eval|xadd|xtrim|xrange|publish|pexpire)[:]/.test(l))
    .map((l) => l.trim().replace(/,rejected_calls=\d+,failed_calls=\d+/, ''));

  // same-run A/B against another checkout's edge at the fixed offered rate (batches and event-loop turns alike on both):
  // CPU per request of each edge, inspect off and on, and Redis's
  const ab: Record<'this' | 'other', { off: number[]; on: number[]; redis: number[]; rps: number[] }> = {
    this: { off: [], on: [], redis: [], rps: [] },
    other: { off: [], on: [], redis: [], rps: [] },
  };
  if (abEdge) {
    // the other edge has not carried the rounds above: warm it (JIT, pools) as this one is, so that neither pays for it
    for (const seconds of [SECONDS, SECONDS]) {
      await load(abPort, seconds);
      await load(abPort, seconds, inspectedHost);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of (round % 2 ? ['other', 'this'] : ['this', 'other']) as ('this' | 'other')[]) {
        const [pid, port] = which === 'this' ? [edge.pid, edgePort] : [abEdge.pid, abPort];
        let before = treeCpuMs(pid);
        const off = await load(port, SECONDS, host, RATE);
        let after = treeCpuMs(pid);
        ab[which].off.push(((after.total - before.total) * 1000) / off.requests.total);
        before = treeCpuMs(pid);
        const redisBefore = schedCpuMs(services.redisPid);
        const on = await load(port, SECONDS, inspectedHost, RATE);
        after = treeCpuMs(pid);
        ab[which].on.push(((after.total - before.total) * 1000) / on.requests.total);
        ab[which].redis.push(((schedCpuMs(services.redisPid) - redisBefore) * 1000) / on.requests.total);
        ab[which].rps.push(on.requests.average / off.requests.average);
      }
    }
  }
  redis.disconnect();

  // let the edge flush, then compare what it metered with what the client received
  await stopChild(edge);
  const metered = (await db.query(`SELECT coalesce(sum(rx),0)::bigint AS rx, coalesce(sum(tx),0)::bigint AS tx FROM usage_samples WHERE share_id = $1`, [zId]))
    .rows[0];
  await db.end();

  const line = (name: string, r: number, p: number) => `${name.padEnd(6)} ${r.toFixed(0).padStart(8)} req/s   p99 ${p.toFixed(1).padStart(6)} ms`;
  console.log(`\nbench:edge — ${CONNECTIONS} connections, ${ROUNDS} x ${SECONDS} s per proxy (medians), 128-byte answers, metering on`);
  console.log(line('nginx', rps('nginx'), p99('nginx')));
  console.log(line('edge', rps('edge'), p99('edge')));
  console.log(
    `ratio  ${(rps('edge') / rps('nginx')).toFixed(2)} of nginx's requests/s (target >= 0.6)   p99 ${(p99('edge') / p99('nginx')).toFixed(2)}x nginx's (target < 2)`,
  );
  console.log(
    `metered by the edge: rx ${metered.rx} B, tx ${metered.tx} B (the client counted ${edgeBytes} B received in the timed rounds, warm-up not included)`,
  );
  console.log(
    `CPU per request (µs, medians): edge ${median(cpuPerRequest.edge).toFixed(0)} (kernel ${median(sysPerRequest.edge).toFixed(0)}), ` +
      `nginx ${median(cpuPerRequest.nginx).toFixed(0)} (kernel ${median(sysPerRequest.nginx).toFixed(0)}), the backend itself ${median(cpuPerRequest.backend).toFixed(0)}`,
  );
  console.log(line('edge+i', rps('inspect'), p99('inspect')) + '   (the same edge, a share with inspect on)');
  console.log(
    `inspect on: ${(rps('inspect') / rps('edge')).toFixed(2)} of inspect off's requests/s (target >= 0.8)   p99 ${(p99('inspect') / p99('edge')).toFixed(2)}x (target < 1.5)`,
  );
  console.log(
    `CPU per request with inspect on (µs, medians): edge ${median(inspectCpu.edge).toFixed(0)} (off: ${median(cpuPerRequest.edge).toFixed(0)}), redis-server ${median(inspectCpu.redis).toFixed(0)}`,
  );
  console.log(
    `at a fixed ${RATE} req/s offered: inspect off ${median(fixed.off.rps).toFixed(0)} req/s, p99 ${median(fixed.off.p99).toFixed(1)} ms, ${median(fixed.off.cpu).toFixed(0)} µs CPU/request; ` +
      `inspect on ${median(fixed.on.rps).toFixed(0)} req/s, p99 ${median(fixed.on.p99).toFixed(1)} ms (${(median(fixed.on.p99) / median(fixed.off.p99)).toFixed(2)}x), ${median(fixed.on.cpu).toFixed(0)} µs CPU/request; capture drops in these rounds: ${droppedAtRate}`,
  );
  console.log(
    `capture: recorded ${counter('edgehub_edge_inspect_recorded_total').join(', ') || 0}; dropped ${counter('edgehub_edge_inspect_dropped_total').join(', ') || 'none'}`,
  );
  console.log(`Redis commands (whole run): ${commandStats.join('; ')}`);
  if (abEdge) {
    const row = (name: string, r: (typeof ab)['this']) => {
      const added = median(r.on) - median(r.off);
      return `${name.padEnd(6)} edge CPU µs/request off ${median(r.off).toFixed(0)} → on ${median(r.on).toFixed(0)} (inspection ${added >= 0 ? '+' : ''}${added.toFixed(0)}), redis-server ${median(r.redis).toFixed(0)} µs per exchange; on/off req/s ${median(r.rps).toFixed(2)}`;
    };
    console.log(`same-run A/B at a fixed ${RATE} req/s offered (${ROUNDS} x ${SECONDS} s each, alternating):`);
    console.log(row('this', ab.this));
    console.log(row(path.basename(abDir!), ab.other));
  }
  console.log(`rounds: edge+inspect ${results.inspect.map((r) => r.requests.average.toFixed(0)).join(', ')}`);
  console.log(
    `rounds: edge ${results.edge.map((r) => r.requests.average.toFixed(0)).join(', ')}; nginx ${results.nginx.map((r) => r.requests.average.toFixed(0)).join(', ')}`,
  );
} catch (err) {
  console.error(`bench:edge-inspect failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
process.exit(process.exitCode ?? 0);
