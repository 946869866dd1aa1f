/**
 * `npm run bench:edge-h2` (also run by `npm run bench:edge`): the h2 column. The same node:http backend behind the
 * edge's TLS listener and behind nginx (Debian's 1.22, one worker, `listen ... ssl http2`: the `http2 on` directive
 * came with nginx 1.25), both with the same self-signed certificate, loaded by h2load (Debian's nghttp2-client) with
 * the same clients, streams per client and duration, alternating rounds in one run. h2load prints no percentiles:
 * p99 comes from its per-request log. Prints requests/s and p99 of both and the ratios (targets: >= 0.6 of nginx's
 * requests/s, p99 < 2x), the CPU each proxy (with its workers) and the backend spent per request (from /proc), and the
 * machine's load average.
 *
 * BENCH_CONNECTIONS (default 20), BENCH_STREAMS per connection (default 10), BENCH_SECONDS per round (default 10),
 * BENCH_ROUNDS (default 3). A same-run A/B: BENCH_A_DIR (a checkout with node_modules; default this one) and/or
 * BENCH_A_ENV (JSON, on top of the edge's environment, e.g. `{"BENCH_NODE_FLAGS":"--max-semi-space-size=64"}`) start
 * a second edge, "edge A", measured in the same rounds.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { ensureCommands } from '../scripts/services/index.js';
import { selfSignedCertificate } from '../test/helpers/selfSigned.js';
import {
  benchShares,
  benchWorkspace,
  cpuMeter,
  edgeRuntime,
  freePort,
  median,
  schedCpuMs,
  startEdgeProcess,
  startNginxProxy,
  startPlainBackend,
  startServices,
  treeCpuMs,
} from './harness.js';

const run = promisify(execFile);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 10);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

ensureCommands([
  { command: 'nginx', pkg: 'nginx', hint: 'Install it: `sudo apt-get install nginx`.' },
  { command: 'h2load', pkg: 'nghttp2-client', hint: 'Install it: `sudo apt-get install nghttp2-client`.' },
]);
const ws = benchWorkspace({ budgetMs: 15 * 60_000 });
try {
  const services = await startServices(ws);
  const { port: backendPort, child: backend } = await startPlainBackend(ws);
  const certs = path.join(ws.work, 'certs');
  mkdirSync(certs, { recursive: true });
  const cert = selfSignedCertificate(certs, 'edge', '/CN=share.localhost', 'DNS:*.share.localhost,DNS:share.localhost');

  const db = new pg.Client({ connectionString: services.databaseUrl });
  db.on('error', () => undefined);
  await db.connect();
  const {
    hosts: [host],
  } = await benchShares(db, `http://127.0.0.1:${backendPort}`, [{ name: 'bench' }]);
  await db.end();

  const edgePort = await freePort();
  const metricsPort = await freePort();
  const edge = startEdgeProcess(ws, services, {
    HUB_METRICS_PORT: String(metricsPort),
    HUB_EDGE_HTTP_PORT: '0',
    HUB_EDGE_HTTPS_PORT: String(edgePort),
    HUB_EDGE_TLS_CERT_FILE: cert.certFile,
    HUB_EDGE_TLS_KEY_FILE: cert.keyFile,
    LOG_LEVEL: 'warn',
  });

  // the A side of an A/B: other code (BENCH_A_DIR), other settings or node flags (BENCH_A_ENV), or both
  const aDir = process.env.BENCH_A_DIR;
  const aEnv = process.env.BENCH_A_ENV;
  const edgeAPort = aDir || aEnv ? await freePort() : undefined;
  const metricsAPort = await freePort();
  const edgeA =
    edgeAPort === undefined
      ? undefined
      : startEdgeProcess(
          ws,
          services,
          {
            HUB_METRICS_PORT: String(metricsAPort),
            HUB_EDGE_HTTP_PORT: '0',
            HUB_EDGE_HTTPS_PORT: String(edgeAPort),
            HUB_EDGE_TLS_CERT_FILE: cert.certFile,
            HUB_EDGE_TLS_KEY_FILE: cert.keyFile,
            LOG_LEVEL: 'warn',
            ...(aEnv ? (JSON.parse(aEnv) as Record<string, string>) : {}),
          },
          aDir ?? '.',
        );

  const { port: nginxPort, child: nginx } = await startNginxProxy(ws, backendPort, cert);
  type Name = 'nginx' | 'edge' | 'edgeA';
  const proxies: { name: Name; port: number; pid: number | undefined; metricsPort?: number }[] = [
    { name: 'nginx', port: nginxPort, pid: nginx.pid },
    { name: 'edge', port: edgePort, pid: edge.pid, metricsPort },
    ...(edgeA && edgeAPort ? [{ name: 'edgeA' as const, port: edgeAPort, pid: edgeA.pid, metricsPort: metricsAPort }] : []),
  ];
  // each proxy with its workers (nginx's), and the backend, per request
  const meters = Object.fromEntries(
    proxies.map((p) => [p.name, cpuMeter({ proxy: () => treeCpuMs(p.pid).total, backend: () => schedCpuMs(backend.pid) })]),
  ) as Record<Name, ReturnType<typeof cpuMeter>>;

  /**
   * One h2load round against `port` (the share's host as :authority and SNI): requests/s and p99 in ms. `seconds`,
   * or a number of requests for the readiness check: in timing mode h2load waits for ever for a client whose
   * connection was refused (an edge still starting), so the check counts requests instead; every round is bounded.
   */
  const load = async (port: number, seconds: number | { requests: number }, tag: string) => {
    const log = path.join(ws.work, `h2load-${tag}.tsv`);
    const { stdout } = await run(
      'h2load',
      [
        '-c',
        String(CONNECTIONS),
        '-m',
        String(STREAMS),
        ...(typeof seconds === 'number' ? ['-D', String(seconds)] : ['-n', String(seconds.requests)]),
        `--connect-to=127.0.0.1:${port}`,
        `--log-file=${log}`,
        `https://${host}:${port}/`,
      ],
      { maxBuffer: 16 << 20, timeout: ((typeof seconds === 'number' ? seconds : 0) + 30) * 1000, killSignal: 'SIGKILL' },
    );
    const rps = Number(/finished in [\d.]+s, ([\d.]+) req\/s/.exec(stdout)?.[1] ?? 0);
    const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(stdout) ?? [];
    const ok = Number(codes[1] ?? 0);
    // requests still in flight when the duration ends are counted failed by h2load: only answers other than 2xx count
    const wrong = Number(codes[2] ?? 0) + Number(codes[3] ?? 0) + Number(codes[4] ?? 0);
    const durations = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => Number(l.split('\t')[2]) / 1000)
      .sort((a, b) => a - b);
    return { rps, p99: durations[Math.floor(durations.length * 0.99)] ?? NaN, ok, wrong, protocol: /Application protocol: (\S+)/.exec(stdout)?.[1] };
  };
  // ready: both answer 200 over h2
  for (let i = 0; ; i++) {
    try {
      const ready = [];
      for (const p of proxies) ready.push(await load(p.port, { requests: 400 }, `ready-${p.name}`));
      if (ready.every((r) => r.ok > 0 && r.protocol === 'h2')) break;
    } catch {
      /* not up yet */
    }
    if (i > 60 || edge.exitCode !== null || (edgeA && edgeA.exitCode !== null)) throw new Error('an edge or nginx did not answer over h2');
    await new Promise((r) => setTimeout(r, 500));
  }
  for (const p of proxies) await load(p.port, 2, `warm-${p.name}`);
  const results: Record<Name, { rps: number; p99: number; cpuUs: number; backendUs: number; gcUs?: number; gcKinds?: string }[]> = {
    edge: [],
    nginx: [],
    edgeA: [],
  };
  for (let round = 0; round < ROUNDS; round++) {
    // alternating order, so that a noisy moment does not favour one
    for (const { name, port, metricsPort: mp } of round % 2 ? [...proxies].reverse() : proxies) {
      const runtimeBefore = mp ? await edgeRuntime(mp) : undefined;
      const m = meters[name].start();
      const r = await load(port, SECONDS, `${name}-${round}`);
      if (r.wrong) throw new Error(`${name}: ${r.wrong} answers were not 2xx`);
      const { proxy: cpuUs, backend: backendUs } = m.per(r.ok);
      // the edge's garbage collection per request, in all and by kind
      let gc: { gcUs: number; gcKinds: string } | undefined;
      if (mp && runtimeBefore) {
        const runtime = await edgeRuntime(mp);
        const per = (s: number) => ((s * 1e6) / r.ok).toFixed(1);
        gc = {
          gcUs: ((runtime.gcSeconds - runtimeBefore.gcSeconds) * 1e6) / r.ok,
          gcKinds: Object.entries(runtime.gcByKind)
            .map(
              ([kind, s]) =>
                `${kind} ${per(s - (runtimeBefore.gcByKind[kind] ?? 0))} µs, ${(runtime.gcCountByKind[kind] ?? 0) - (runtimeBefore.gcCountByKind[kind] ?? 0)} times`,
            )
            .join(', '),
        };
      }
      results[name].push({ ...r, cpuUs, backendUs, ...gc });
      console.log(
        `  round ${round + 1} ${name.padEnd(6)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${r.p99.toFixed(1)} ms  CPU ${cpuUs.toFixed(1)} µs/request (backend ${backendUs.toFixed(1)})${gc ? `, GC ${gc.gcUs.toFixed(1)} (${gc.gcKinds})` : ''}`,
      );
    }
  }
  const rps = (n: Name) => median(results[n].map((r) => r.rps));
  const p99 = (n: Name) => median(results[n].map((r) => r.p99));
  const cpu = (n: Name) =>
    `CPU ${median(results[n].map((r) => r.cpuUs)).toFixed(1)} µs/request (backend ${median(results[n].map((r) => r.backendUs)).toFixed(1)})${
      n === 'nginx' ? '' : `, GC ${median(results[n].map((r) => r.gcUs ?? 0)).toFixed(1)}`
    }`;
  console.log(
    `\nbench:edge h2 — h2load ${CONNECTIONS} connections x ${STREAMS} streams, ${ROUNDS} x ${SECONDS} s per proxy (medians), 128-byte answers, TLS; load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  console.log(`nginx  ${rps('nginx').toFixed(0).padStart(8)} req/s   p99 ${p99('nginx').toFixed(1).padStart(6)} ms   ${cpu('nginx')}`);
  console.log(`edge   ${rps('edge').toFixed(0).padStart(8)} req/s   p99 ${p99('edge').toFixed(1).padStart(6)} ms   ${cpu('edge')}`);
  console.log(
    `ratio  ${(rps('edge') / rps('nginx')).toFixed(2)} of nginx's requests/s (target >= 0.6)   p99 ${(p99('edge') / p99('nginx')).toFixed(2)}x nginx's (target < 2)`,
  );
  if (edgeA) {
    console.log(
      `edge A ${rps('edgeA').toFixed(0).padStart(8)} req/s   p99 ${p99('edgeA').toFixed(1).padStart(6)} ms   ${cpu('edgeA')}   (${aDir ?? '.'} ${aEnv ?? ''})`,
    );
    console.log(`edge A ratio ${(rps('edgeA') / rps('nginx')).toFixed(2)} of nginx's; edge A / edge ${(rps('edgeA') / rps('edge')).toFixed(2)}`);
  }
} catch (err) {
  console.error(`bench:edge-h2 failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
process.exit(process.exitCode ?? 0);
