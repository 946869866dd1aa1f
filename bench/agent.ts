/**
 * `npm run bench:agent`: one backend reached through the edge two ways in the same run: directly (edge -> target)
 * and through an agent (edge -> agent -> target, the agent's HTTP/2 connection over TLS to the edge's listener),
 * under the same load (autocannon, same connections and duration, rounds alternating). Prints requests/s and p99 of
 * both with the ratios (targets: >= 0.6 of direct requests/s, p99 < 2x direct) and the CPU the edge, the agent and
 * the target spent per request on each path, the throughput of one 1 GiB
 * download and one 1 GiB upload each way (target: >= 0.5 of direct), and the edge's and the agent's resident memory
 * while a client reads a fast download at 1 MB/s, measured first, on the processes as they started (target: both
 * below 200 MB).
 *
 * The bench writes its hub, shares and agent straight into PostgreSQL (it measures the data plane): the edge serves
 * a certificate of the bench's own making (HUB_EDGE_TLS_CERT_FILE), which the agent trusts; the agent's certificate
 * is self-signed and listed by fingerprint, which is all the edge checks of it.
 *
 * Then the pool run (bench/agentPool.ts; BENCH_POOL=0 leaves it out): weights, a backup agent, a rolling restart under
 * load, the edge's CPU per request with three agents against one.
 *
 * BENCH_CONNECTIONS (default 50), BENCH_SECONDS per round (default 10), BENCH_ROUNDS (default 3), BENCH_BIG_MIB (1024).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { benchAgent } from './agentFixtures.js';
import { selfSignedCertificate } from '../test/helpers/selfSigned.js';
import { poolBench } from './agentPool.js';
import { benchWorkspace, cpuMeter, describeCpu, freePort, median, schedCpuMs, startEdgeProcess, startServices, stopChild } from './harness.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BIG = Number(process.env.BENCH_BIG_MIB ?? 1024) * 1024 * 1024;

const ws = benchWorkspace({ budgetMs: 15 * 60_000 });

/** The target: 128 bytes on `/`, N bytes on `/big?n=N` (as fast as the reader takes them), `/sink` counts an upload. */
async function startBackend(): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const code = `
    const http = require('http');
    const small = Buffer.alloc(128, 120), chunk = Buffer.alloc(1 << 20, 121);
    http.createServer((q, s) => {
      const u = new URL(q.url, 'http://x');
      if (u.pathname === '/big') {
        let left = Number(u.searchParams.get('n'));
        s.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': left });
        const pump = () => { while (left > 0) { const n = Math.min(left, chunk.length); left -= n; if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void s.once('drain', pump); } s.end(); };
        s.on('close', () => (left = 0));
        return pump();
      }
      let got = 0;
      q.on('data', (d) => (got += d.length));
      q.on('end', () => { const b = u.pathname === '/sink' ? Buffer.from(String(got)) : small; s.writeHead(200, { 'content-type': 'text/plain', 'content-length': b.length }); s.end(b); });
    }).listen(${port}, '127.0.0.1');`;
  const child = spawn(process.execPath, ['-e', code], { stdio: 'inherit' });
  ws.onCleanup(() => stopChild(child));
  return { port, child };
}

const rssMb = (pid: number | undefined): number => {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
};

/** GETs `path` and discards the body; seconds taken. */
function download(port: number, host: string, p: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http
      .get({ host: '127.0.0.1', port, path: p, headers: { host } }, (res) => {
        let n = 0;
        res.on('data', (d: Buffer) => (n += d.length));
        res.on('end', () => (n === BIG ? resolve((performance.now() - started) / 1000) : reject(new Error(`downloaded ${n} of ${BIG} bytes`))));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** POSTs BIG bytes to /sink; seconds taken (the target counts what arrived). */
function upload(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const chunk = Buffer.alloc(1 << 20, 122);
    const req = http.request({ host: '127.0.0.1', port, path: '/sink', method: 'POST', headers: { host, 'content-length': String(BIG) } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () =>
        Number(body) === BIG ? resolve((performance.now() - started) / 1000) : reject(new Error(`the target counted ${body} of ${BIG} bytes`)),
      );
    });
    req.on('error', reject);
    let left = BIG;
    const pump = () => {
      while (left > 0) {
        left -= chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

/** Reads a large fast download at about 1 MB/s for `seconds`, sampling the RSS of `pids`; the highest of each. */
function slowReader(port: number, host: string, seconds: number, pids: (number | undefined)[]): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const peaks = pids.map(() => 0);
    const started = Date.now();
    const req = http.get({ host: '127.0.0.1', port, path: `/big?n=${4 * 1024 * 1024 * 1024}`, headers: { host } }, (res) => {
      let n = 0;
      res.on('data', (d: Buffer) => {
        n += d.length;
        const due = ((Date.now() - started) / 1000) * 1024 * 1024;
        if (n > due) {
          res.pause();
          setTimeout(() => res.resume(), Math.min(1000, ((n - due) / (1024 * 1024)) * 1000));
        }
      });
    });
    req.on('error', (err) => (Date.now() - started < seconds * 1000 ? reject(err) : undefined));
    const sampler = setInterval(() => pids.forEach((pid, i) => (peaks[i] = Math.max(peaks[i], rssMb(pid)))), 250);
    setTimeout(() => {
      clearInterval(sampler);
      req.destroy();
      resolve(peaks);
    }, seconds * 1000);
  });
}

try {
  const services = await startServices(ws);
  const backend = await startBackend();
  const certs = path.join(ws.work, 'certs');
  mkdirSync(certs, { recursive: true });
  const edgeCert = selfSignedCertificate(certs, 'edge', '/CN=share.localhost', 'DNS:*.share.localhost,DNS:share.localhost');
  const agentCert = selfSignedCertificate(certs, 'agent', '/CN=bench agent');

  const db = new pg.Client({ connectionString: services.databaseUrl });
  db.on('error', () => undefined);
  await db.connect();
  const hubId = `bench-${randomBytes(4).toString('hex')}`;
  await db.query(`INSERT INTO hubs (id, name) VALUES ($1, 'bench')`, [hubId]);
  const frontend = (await db.query(`SELECT id, url_template FROM frontends WHERE public_name = 'public' AND hub_id IS NULL`)).rows[0];
  const share = async (envZId: string) => {
    const zId = randomBytes(6).toString('hex');
    await db.query(`INSERT INTO environments (env_z_id, hub_id, description, created_by, is_default) VALUES ($1, $2, $1, 'bench', false)`, [envZId, hubId]);
    await db.query(
      `INSERT INTO shares (z_id, hub_id, env_z_id, name, frontend_id, frontend_endpoint, target, status, created_by) VALUES ($1, $2, $3, 'bench', $4, $5, $6, 'ACTIVE', 'bench')`,
      [zId, hubId, envZId, frontend.id, frontend.url_template.replace('{token}', zId), `http://127.0.0.1:${backend.port}`],
    );
    await db.query(`INSERT INTO share_frontends (share_z_id, frontend_id, position) VALUES ($1, $2, 0)`, [zId, frontend.id]);
    return `${zId}.share.localhost`;
  };
  const directHost = await share(`direct${randomBytes(3).toString('hex')}`);
  const agentEnv = `agent${randomBytes(3).toString('hex')}`;
  const agentHost = await share(agentEnv);
  const [edgePort, edgeTlsPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const edge = startEdgeProcess(ws, services, {
    HUB_EDGE_HTTP_PORT: String(edgePort),
    HUB_EDGE_HTTPS_PORT: String(edgeTlsPort),
    HUB_EDGE_TLS_CERT_FILE: edgeCert.certFile,
    HUB_EDGE_TLS_KEY_FILE: edgeCert.keyFile,
    HUB_METRICS_PORT: String(metricsPort),
    LOG_LEVEL: 'warn',
  });

  // the agent's row and identity (as `edgehub agent enroll` writes it), and the agent as a user runs it
  const dir = path.join(ws.work, 'agent');
  await benchAgent(db, { hubId, envZId: agentEnv, agent: agentCert, edgeCaPem: edgeCert.cert, edges: [`127.0.0.1:${edgeTlsPort}`], dir });
  const agent = spawn(
    process.execPath,
    [...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []), 'agent/bin/edgehub.js', 'agent', 'run', '--dir', dir],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  ws.onCleanup(() => stopChild(agent));

  const ready = async (host: string) => {
    for (let i = 0; i < 300; i++) {
      const status = await new Promise<number>((resolve) =>
        http.get({ host: '127.0.0.1', port: edgePort, headers: { host } }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', () => resolve(0)),
      );
      if (status === 200) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${host} did not answer 200`);
  };
  await Promise.all([ready(directHost), ready(agentHost)]);
  // the slow reader first, on the processes as they started: what it measures is what a slow client makes the edge
  // and the agent hold, not what the 1 GiB transfers below leave behind in their heaps and the allocator
  const idle = { edge: rssMb(edge.pid), agent: rssMb(agent.pid) };
  const [edgePeak, agentPeak] = await slowReader(edgePort, agentHost, 15, [edge.pid, agent.pid]);

  const load = (host: string, seconds: number) =>
    new Promise<autocannon.Result>((resolve, reject) =>
      autocannon({ url: `http://127.0.0.1:${edgePort}`, connections: CONNECTIONS, duration: seconds, headers: { host } }, (err, result) =>
        err ? reject(err) : resolve(result),
      ),
    );
  await load(directHost, 2);
  await load(agentHost, 2);
  const results: Record<'direct' | 'agent', autocannon.Result[]> = { direct: [], agent: [] };
  const meter = cpuMeter({ edge: () => schedCpuMs(edge.pid), agent: () => schedCpuMs(agent.pid), target: () => schedCpuMs(backend.child.pid) });
  const cpu: Record<'direct' | 'agent', Record<string, number>[]> = { direct: [], agent: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order: ['direct' | 'agent', string][] =
      round % 2
        ? [
            ['agent', agentHost],
            ['direct', directHost],
          ]
        : [
            ['direct', directHost],
            ['agent', agentHost],
          ];
    for (const [name, host] of order) {
      const m = meter.start();
      const r = await load(host, SECONDS);
      cpu[name].push(m.per(r.requests.total));
      if (r.non2xx || r.errors > r.requests.total / 1000) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      results[name].push(r);
    }
  }
  const rps = (n: 'direct' | 'agent') => median(results[n].map((r) => r.requests.average));
  const p99 = (n: 'direct' | 'agent') => median(results[n].map((r) => r.latency.p99));

  const transfer: Record<string, number> = {};
  for (const [name, host] of [
    ['direct', directHost],
    ['agent', agentHost],
  ] as const) {
    transfer[`${name} down`] = await download(edgePort, host, `/big?n=${BIG}`);
    transfer[`${name} up`] = await upload(edgePort, host);
  }
  const mbps = (seconds: number) => BIG / 1024 / 1024 / seconds;

  const pool =
    process.env.BENCH_POOL === '0'
      ? []
      : await poolBench({
          ws,
          db,
          hubId,
          share,
          singleHost: agentHost,
          edgePid: edge.pid,
          edgePort,
          edgeTlsPort,
          metricsPort,
          edgeCert,
          certs,
          connections: CONNECTIONS,
          seconds: SECONDS,
        });
  await db.end();

  console.log(`\nbench:agent — ${CONNECTIONS} connections, ${ROUNDS} x ${SECONDS} s per path (medians), 128-byte answers; the same target`);
  const line = (name: string, r: number, p: number, c: Record<string, number>[]) =>
    `${name.padEnd(22)} ${r.toFixed(0).padStart(8)} req/s   p99 ${p.toFixed(1).padStart(6)} ms   ${describeCpu(c, 'request')}`;
  console.log(line('edge -> target', rps('direct'), p99('direct'), cpu.direct));
  console.log(line('edge -> agent -> target', rps('agent'), p99('agent'), cpu.agent));
  console.log(
    `ratio  ${(rps('agent') / rps('direct')).toFixed(2)} of direct requests/s (target >= 0.6)   p99 ${(p99('agent') / p99('direct')).toFixed(2)}x direct (target < 2)`,
  );
  console.log(
    `${BIG / 1024 / 1024} MiB download: direct ${mbps(transfer['direct down']).toFixed(0)} MiB/s, agent ${mbps(transfer['agent down']).toFixed(0)} MiB/s, ratio ${(transfer['direct down'] / transfer['agent down']).toFixed(2)} (target >= 0.5)`,
  );
  console.log(
    `${BIG / 1024 / 1024} MiB upload:   direct ${mbps(transfer['direct up']).toFixed(0)} MiB/s, agent ${mbps(transfer['agent up']).toFixed(0)} MiB/s, ratio ${(transfer['direct up'] / transfer['agent up']).toFixed(2)} (no target: for the record)`,
  );
  console.log(
    `memory with a client reading at 1 MB/s from a fast target through the agent (15 s): edge peak ${edgePeak.toFixed(0)} MB (before it ${idle.edge.toFixed(0)}), agent peak ${agentPeak.toFixed(0)} MB (before it ${idle.agent.toFixed(0)}) (target < 200 MB each), measured before the other phases`,
  );
  for (const line of pool) console.log(line);
  console.log(
    `rounds: direct ${results.direct.map((r) => r.requests.average.toFixed(0)).join(', ')}; agent ${results.agent.map((r) => r.requests.average.toFixed(0)).join(', ')}`,
  );
} catch (err) {
  console.error(`bench:agent failed: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  await ws.cleanUp();
}
process.exit(process.exitCode ?? 0);
