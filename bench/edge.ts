/**
 * `npm run bench:edge`: the same node:http backend behind the edge and behind nginx (Debian's, one worker process,
 * keep-alive upstream), loaded by the same client (autocannon, same connections and duration) in one run. Prints
 * requests/s and p99 latency of both and the ratios, the CPU each proxy spent per request (user + kernel, from /proc),
 * and the edge's GC time per request and event-loop delay (its prom-client default metrics, scraped around each of its
 * rounds). Metering is on (the edge flushes its counters as usual); the bytes it metered are printed beside what the
 * client counted.
 *
 * Each round's line also says how often the proxy was taken off its core while it had work (involuntary context
 * switches) and gave it up to wait (voluntary), per 1,000 requests: a proxy that never waits is saturated.
 *
 * BENCH_CONNECTIONS (default 50), BENCH_SECONDS per round (default 10), BENCH_ROUNDS (default 3, alternating).
 * BENCH_A_DIR: a second edge run from that code directory (a checkout with node_modules) in the same rounds, for a
 * same-run A/B of a change to the edge; BENCH_A_ENV (JSON, on top of that edge's environment, e.g.
 * `{"BENCH_NODE_FLAGS":"..."}`; this checkout when BENCH_A_DIR is not set) for an A/B of a setting or a node flag.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { ensureCommands } from '../scripts/services/index.js';
import {
  benchShares,
  benchWorkspace,
  edgeRuntime,
  freePort,
  median,
  schedCpuMs,
  startEdgeProcess,
  startServices,
  startNginxProxy,
  startPlainBackend,
  stopChild,
  treeContextSwitches,
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
  const {
    zIds: [zId],
    hosts: [host],
  } = await benchShares(db, `http://127.0.0.1:${backendPort}`, [{ name: 'bench' }]);

  // the edge, as the Procfile runs it
  const edgePort = await freePort();
  const metricsPort = await freePort();
  const edge = startEdgeProcess(ws, services, {
    HUB_METRICS_PORT: String(metricsPort),
    HUB_EDGE_HTTP_PORT: String(edgePort),
    HUB_EDGE_HTTPS_PORT: '0',
    LOG_LEVEL: 'warn',
  });

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
  // BENCH_A_DIR / BENCH_A_ENV: a second edge from other code (a checkout) or with other settings or node flags (JSON on
  // top of its environment), on the same routes, measured in the same rounds (A/B)
  const aEnv = process.env.BENCH_A_ENV;
  const aDir = process.env.BENCH_A_DIR ?? (aEnv ? '.' : undefined);
  let edgeA: { port: number; metricsPort: number; child: ChildProcess } | undefined;
  if (aDir) {
    const port = await freePort();
    const metrics = await freePort();
    // started as the edge above is (the same flags, among them the garbage collector's), from aDir
    const child = startEdgeProcess(
      ws,
      services,
      { HUB_METRICS_PORT: String(metrics), HUB_EDGE_HTTP_PORT: String(port), HUB_EDGE_HTTPS_PORT: '0', LOG_LEVEL: 'warn', ...JSON.parse(aEnv ?? '{}') },
      aDir,
    );
    edgeA = { port, metricsPort: metrics, child };
  }
  await Promise.all([ready(edgePort), ready(nginxPort), ...(edgeA ? [ready(edgeA.port)] : [])]);
  if (edge.exitCode !== null) throw new Error('the edge exited');

  type Name = 'nginx' | 'edge' | 'edgeA';
  const proxies: { name: Name; port: number; pid: number | undefined; metricsPort?: number }[] = [
    { name: 'nginx', port: nginxPort, pid: nginx.pid },
    { name: 'edge', port: edgePort, pid: edge.pid, metricsPort },
    ...(edgeA ? [{ name: 'edgeA' as const, port: edgeA.port, pid: edgeA.child.pid, metricsPort: edgeA.metricsPort }] : []),
  ];
  const load = (port: number, seconds: number) =>
    new Promise<autocannon.Result>((resolve, reject) =>
      autocannon({ url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration: seconds, headers: { host } }, (err, result) =>
        err ? reject(err) : resolve(result),
      ),
    );
  // warm each (JIT, pools), then alternate so that a noisy moment does not favour one
  for (const p of proxies) await load(p.port, 2);
  const blank = () => ({
    results: [] as autocannon.Result[],
    cpu: [] as number[],
    sys: [] as number[],
    backend: [] as number[],
    gc: [] as number[],
    gcShare: [] as number[],
    delayMean: [] as number[],
    delayP99: [] as number[],
  });
  const m: Record<Name, ReturnType<typeof blank>> = { nginx: blank(), edge: blank(), edgeA: blank() };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? [...proxies].reverse() : proxies;
    for (const p of order) {
      const runtimeBefore = p.metricsPort ? await edgeRuntime(p.metricsPort) : undefined;
      const before = { proxy: treeCpuMs(p.pid), backend: schedCpuMs(backend.pid), switches: treeContextSwitches(p.pid) };
      const r = await load(p.port, SECONDS);
      // a wrong answer is a failure; a handful of client time-outs on a loaded machine is reported, not fatal
      if (r.non2xx || r.errors > r.requests.total / 1000) throw new Error(`${p.name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      if (r.errors) console.error(`${p.name}: ${r.errors} client errors (time-outs) of ${r.requests.total} requests`);
      const after = treeCpuMs(p.pid);
      const cpuMsUsed = after.total - before.proxy.total;
      const x = m[p.name];
      x.results.push(r);
      x.cpu.push((cpuMsUsed * 1000) / r.requests.total);
      x.sys.push(((after.sys - before.proxy.sys) * 1000) / r.requests.total);
      x.backend.push(((schedCpuMs(backend.pid) - before.backend) * 1000) / r.requests.total);
      if (p.metricsPort) {
        const runtime = await edgeRuntime(p.metricsPort);
        const gcMs = (runtime.gcSeconds - runtimeBefore!.gcSeconds) * 1000;
        x.gc.push((gcMs * 1000) / r.requests.total);
        x.gcShare.push(gcMs / cpuMsUsed);
        x.delayMean.push(runtime.delayMeanMs);
        x.delayP99.push(runtime.delayP99Ms);
      }
      // how often the proxy was taken off its core while it had work (involuntary) and gave it up waiting (voluntary)
      const switches = treeContextSwitches(p.pid);
      const per1000 = (n: number) => ((n * 1000) / r.requests.total).toFixed(1);
      console.log(
        `  round ${round + 1} ${p.name.padEnd(6)} ${r.requests.average.toFixed(0).padStart(7)} req/s  p99 ${r.latency.p99} ms  CPU ${x.cpu.at(-1)!.toFixed(1)} µs/request (kernel ${x.sys.at(-1)!.toFixed(1)}, backend ${x.backend.at(-1)!.toFixed(1)}), switches per 1,000 requests: ${per1000(switches.involuntary - before.switches.involuntary)} preempted, ${per1000(switches.voluntary - before.switches.voluntary)} waiting`,
      );
    }
  }
  const rps = (name: Name) => median(m[name].results.map((r) => r.requests.average));
  const p99 = (name: Name) => median(m[name].results.map((r) => r.latency.p99));
  const edgeBytes = m.edge.results.reduce((n, r) => n + r.throughput.total, 0);

  // let the edges flush, then compare what they metered with what the client received
  await stopChild(edge);
  if (edgeA) await stopChild(edgeA.child);
  const metered = (await db.query(`SELECT coalesce(sum(rx),0)::bigint AS rx, coalesce(sum(tx),0)::bigint AS tx FROM usage_samples WHERE share_id = $1`, [zId]))
    .rows[0];
  await db.end();

  const line = (name: string, r: number, p: number) => `${name.padEnd(6)} ${r.toFixed(0).padStart(8)} req/s   p99 ${p.toFixed(1).padStart(6)} ms`;
  console.log(
    `\nbench:edge — ${CONNECTIONS} connections, ${ROUNDS} x ${SECONDS} s per proxy (medians), 128-byte answers, metering on; load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  console.log(line('nginx', rps('nginx'), p99('nginx')));
  for (const name of ['edge', ...(edgeA ? ['edgeA'] : [])] as Name[]) {
    const x = m[name];
    const label = name === 'edgeA' ? `edge A (${aDir})` : 'edge';
    console.log(line(name, rps(name), p99(name)));
    console.log(
      `       ${label}: ratio ${(rps(name) / rps('nginx')).toFixed(2)} of nginx's requests/s (target >= 0.6), p99 ${(p99(name) / p99('nginx')).toFixed(2)}x nginx's (target < 1)`,
    );
    console.log(
      `       CPU ${median(x.cpu).toFixed(1)} µs per request (kernel ${median(x.sys).toFixed(1)}), the backend ${median(x.backend).toFixed(1)}; GC ${median(x.gc).toFixed(1)} µs per request (${(100 * median(x.gcShare)).toFixed(1)} % of its CPU); event-loop delay mean ${median(x.delayMean).toFixed(2)} ms, p99 ${median(x.delayP99).toFixed(2)} ms`,
    );
  }
  console.log(`nginx: CPU ${median(m.nginx.cpu).toFixed(1)} µs per request (kernel ${median(m.nginx.sys).toFixed(1)})`);
  if (edgeA) {
    // each round measures both edges back to back: the difference within a round moves less with the machine's load
    // than either figure does
    const paired = m.edge.cpu.map((cpu, i) => cpu - m.edgeA.cpu[i]);
    console.log(
      `A/B: edge - edge A = ${(median(m.edge.cpu) - median(m.edgeA.cpu)).toFixed(1)} µs CPU per request (medians); per round ${paired.map((d) => d.toFixed(1)).join(', ')}, median ${median(paired).toFixed(1)}; req/s edge/edge A ${(rps('edge') / rps('edgeA')).toFixed(2)}`,
    );
  }
  console.log(
    `metered by the edges: rx ${metered.rx} B, tx ${metered.tx} B (the client counted ${edgeBytes} B received from the edge in the timed rounds${edgeA ? ', plus what edge A carried' : ''}, warm-up not included)`,
  );
} catch (err) {
  console.error(`bench:edge failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
process.exit(process.exitCode ?? 0);
