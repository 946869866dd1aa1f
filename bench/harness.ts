/**
 * What the benchmarks share: a temporary work directory with a time budget and a cleanup list, the embedded
 * PostgreSQL + redis-server they run against (migrated), service processes started through tsx, /proc-based CPU
 * accounting, and small statistics and HTTP helpers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { Sequelize } from 'sequelize';
import { freePort, startPostgres, startRedis } from '../scripts/services/index.js';
import { gcFlags, oldGenerationFlags, youngGenerationFlags } from '../shared/config.js';
import { migrate } from '../domain/migrate.js';
import { buildTree } from '../scripts/build.js';

export { freePort };

export interface BenchWorkspace {
  /** A fresh directory below the system temp dir (mode 755, so that embedded PostgreSQL can reach it as root). */
  work: string;
  /** Registers a step for cleanUp(); steps run in reverse order of registration, failures ignored. */
  onCleanup(step: () => Promise<unknown>): void;
  /** Runs the registered steps and removes the work directory. */
  cleanUp(): Promise<void>;
}

/**
 * A work directory and a cleanup list. After `budgetMs` (default 10 min) the process cleans up and exits with
 * status 2, saying so on stderr; stopped by SIGINT or SIGTERM (Ctrl-C, `timeout`), it stops what it started first
 * (the processes it started would otherwise outlive it and load the next bench's machine).
 */
export function benchWorkspace({ budgetMs = 10 * 60_000 }: { budgetMs?: number } = {}): BenchWorkspace {
  const work = mkdtempSync(path.join(os.tmpdir(), 'edgehub-bench-'));
  chmodSync(work, 0o755);
  const cleanups: (() => Promise<unknown>)[] = [];
  let cleaning: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      for (const step of cleanups.reverse()) await step().catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`bench: ${signal}; stopping what it started`);
      void cleanUp().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  setTimeout(() => {
    console.error(`bench exceeded its ${budgetMs / 60_000} min budget; stopping`);
    void cleanUp().finally(() => process.exit(2));
  }, budgetMs).unref();
  return { work, onCleanup: (step) => void cleanups.push(step), cleanUp };
}

export interface BenchServices {
  databaseUrl: string;
  redisUrl: string;
  /** The PostgreSQL data directory (holds postmaster.pid, for postgresCpuMs). */
  postgresDataDir: string;
  redisPid: number | undefined;
}

/** Embedded PostgreSQL (database `bench`, migrated) and a redis-server, both stopped by the workspace's cleanUp(). */
export async function startServices(ws: BenchWorkspace): Promise<BenchServices> {
  const postgresDataDir = path.join(ws.work, 'postgres');
  const postgres = await startPostgres(postgresDataDir, { persistent: false, database: 'bench' });
  ws.onCleanup(() => postgres.stop());
  const redis = await startRedis(undefined);
  ws.onCleanup(() => redis.stop());
  const databaseUrl = postgres.url('bench');
  const migrator = new Sequelize(databaseUrl, { logging: false });
  await migrate(migrator);
  await migrator.close();
  return { databaseUrl, redisUrl: redis.url, postgresDataDir, redisPid: redis.process.pid };
}

/** SIGTERM, then resolves once the child has exited (at once if it already has). */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    // a child killed by a signal has no exit code, only its signal
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const trees = new Map<string, string>();

/**
 * The code in `dir` compiled as `npm start` compiles it (scripts/build.ts), built once per bench run in the workspace:
 * the service's processes are measured the way npm start runs them, without a TypeScript loader.
 */
export function compiledScript(ws: BenchWorkspace, script: string, dir = '.'): string {
  const key = path.resolve(dir);
  let tree = trees.get(key);
  if (!tree) {
    tree = path.join(ws.work, `build-${trees.size}`);
    buildTree(key, tree);
    trees.set(key, tree);
  }
  return path.join(tree, script.replace(/\.ts$/, '.js'));
}

/**
 * `<script>` of the checkout in `dir` (default this one), compiled as `npm start` runs it, with `env` (stdout ignored
 * unless BENCH_STDOUT=1, stderr inherited), stopped by the workspace's cleanUp(), with the node flags npm start gives its children
 * (HUB_GC_THREADS: `parallel` measures Node's default collector; HUB_GC_YOUNG_MB=0 V8's default young generation;
 * HUB_GC_EDGE_OLD_MB=80 the edge's old generation starting at 80 MB). BENCH_PROFILE=<dir> writes a V8 CPU profile of each
 * process there (`env.BENCH_PROFILE: ''` leaves a set-up process out); BENCH_NODE_FLAGS adds node flags to each (e.g.
 * `--perf-basic-prof` for `perf record`; `--trace-gc` or `--trace-deopt`, which print to stdout, with BENCH_STDOUT=1;
 * `env.BENCH_NODE_FLAGS` for this process alone).
 */
export function startProcess(ws: BenchWorkspace, script: string, env: NodeJS.ProcessEnv, dir = '.'): ChildProcess {
  const profileDir = env.BENCH_PROFILE ?? process.env.BENCH_PROFILE;
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  // the flags npm start gives its children (HUB_GC_THREADS, HUB_GC_YOUNG_MB), then any the bench is asked for
  const mode = env.HUB_GC_THREADS ?? process.env.HUB_GC_THREADS ?? 'auto';
  const startFlags = [
    ...(mode === 'single' || mode === 'parallel' || mode === 'auto' ? gcFlags(mode) : []),
    ...youngGenerationFlags(Number(env.HUB_GC_YOUNG_MB ?? process.env.HUB_GC_YOUNG_MB ?? 16)),
    ...(script === 'edge/index.ts' ? oldGenerationFlags(Number(env.HUB_GC_EDGE_OLD_MB ?? process.env.HUB_GC_EDGE_OLD_MB ?? 0)) : []),
  ];
  const flags = [...startFlags, ...(env.BENCH_NODE_FLAGS ?? process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)];
  const child = spawn(process.execPath, [...profile, ...flags, compiledScript(ws, script, dir)], {
    cwd: dir,
    env,
    stdio: ['ignore', (env.BENCH_STDOUT ?? process.env.BENCH_STDOUT) ? 'inherit' : 'ignore', 'inherit'],
  });
  ws.onCleanup(() => stopChild(child));
  return child;
}

/** The proxied backend of the edge benches: node:http in a process of its own, 128 bytes to every request. */
export async function startPlainBackend(ws: BenchWorkspace): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const b=Buffer.alloc(128,120);require('http').createServer((q,s)=>{q.resume();q.on('end',()=>{s.writeHead(200,{'content-type':'text/plain','content-length':b.length});s.end(b)})}).listen(${port},'127.0.0.1')`,
    ],
    { stdio: 'inherit' },
  );
  ws.onCleanup(() => stopChild(child));
  return { port, child };
}

/**
 * `edge/index.ts` as npm start runs it, against the bench's services, with `env` on top (ports, TLS files), from the
 * checkout in `dir` (default this one).
 */
export function startEdgeProcess(ws: BenchWorkspace, services: BenchServices, env: NodeJS.ProcessEnv, dir = '.'): ChildProcess {
  return startProcess(
    ws,
    'edge/index.ts',
    {
      ...process.env,
      DATABASE_URL: services.databaseUrl,
      REDIS_URL: services.redisUrl,
      HUB_DATA_DIR: path.join(ws.work, 'data'),
      HUB_PROCESS: 'edge',
      ...env,
    },
    dir,
  );
}

/** Polls `${baseUrl}/healthz` until it answers 2xx; fails after 30 s or once `child` (the API process) has exited. */
export function waitUntilHealthy(baseUrl: string, child: ChildProcess): Promise<void> {
  return waitUntilAnswering(`${baseUrl}/healthz`, { ok: true, alive: () => child.exitCode === null, failure: 'the API did not start' });
}

/**
 * Polls `url` every 100 ms until it answers (with a 2xx when `ok`; any status otherwise), and throws `failure` once
 * `timeoutMs` have passed or `alive()` says the process behind it has gone.
 */
export async function waitUntilAnswering(
  url: string,
  { ok = false, alive, failure, timeoutMs = 30_000 }: { ok?: boolean; alive: () => boolean; failure: string | (() => string); timeoutMs?: number },
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.ok || !ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline || !alive()) throw new Error(typeof failure === 'string' ? failure : failure());
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A small JSON client on a keep-alive agent (lighter than fetch, so a load generator takes less CPU): status and body. */
export function jsonRequest(
  agent: http.Agent,
  base: URL,
  method: string,
  urlPath: string,
  body?: unknown,
  auth?: string,
): Promise<{ status: number; json: any }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method,
        path: urlPath,
        headers: {
          accept: 'application/json',
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          ...(auth ? { authorization: auth } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A JSON client for `baseUrl` with a fixed authorization header; a string body is sent as it is. */
export function jsonClient(baseUrl: string, authorization: string) {
  return async (method: string, urlPath: string, body?: unknown) => {
    const res = await fetch(baseUrl + urlPath, {
      method,
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
  };
}

/**
 * The environment of a web process the benches start: the bench's services (or `databaseUrl`), the admin token, a
 * fixed secret key, `npm start`'s log level unless LOG_LEVEL says otherwise, then `extra`.
 */
export function webEnv(
  ws: BenchWorkspace,
  services: BenchServices,
  port: number,
  adminToken: string,
  extra: Record<string, string> = {},
  databaseUrl = services.databaseUrl,
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: services.redisUrl,
    HUB_ADMIN_TOKEN: adminToken,
    HUB_SECRET_KEY: '11'.repeat(32),
    HUB_DATA_DIR: path.join(ws.work, 'data'),
    PORT: String(port),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    HUB_PROCESS: 'web',
    ...extra,
  };
}

/**
 * An API process run from the code in `dir` (a checkout, for the A/B benches), compiled as `npm start` runs it,
 * against the bench's services, with `extra` environment on top; resolves once it answers /healthz. Every process of
 * one run shares one secret key, so each reads what the other wrote.
 */
async function startApiIn(
  ws: BenchWorkspace,
  services: BenchServices,
  dir: string,
  adminToken: string,
  extra: Record<string, string> = {},
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = startProcess(ws, 'api/server.ts', webEnv(ws, services, port, adminToken, extra), dir);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilHealthy(url, child);
  return { url, child };
}

/** The two sides of an A/B bench: API processes from BENCH_A_DIR and BENCH_B_DIR (default .), with BENCH_A_ENV / BENCH_B_ENV (JSON) on top. */
export async function startAbSides(ws: BenchWorkspace, services: BenchServices, adminToken: string) {
  return {
    A: await startApiIn(ws, services, process.env.BENCH_A_DIR ?? '.', adminToken, JSON.parse(process.env.BENCH_A_ENV ?? '{}')),
    B: await startApiIn(ws, services, process.env.BENCH_B_DIR ?? '.', adminToken, JSON.parse(process.env.BENCH_B_ENV ?? '{}')),
  };
}

/**
 * A database of its own on the bench's PostgreSQL, migrated by the code in `dir` (its scripts/migrate.ts, as the
 * Procfile's release step runs it): for A/B runs whose sides differ in schema.
 */
export async function migratedDatabase(services: BenchServices, name: string, dir: string): Promise<string> {
  const admin = new pg.Client({ connectionString: services.databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = services.databaseUrl.replace(/\/[^/]*$/, `/${name}`);
  const migrate = spawn(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
    cwd: dir,
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const code = await new Promise((resolve) => migrate.once('exit', resolve));
  if (code !== 0) throw new Error(`migrating ${name} from ${dir} failed (${code})`);
  return url;
}

/**
 * An API process from `dir` on `databaseUrl` (not yet waited for), compiled as `npm start` runs it, for benches that
 * start their sides again per round.
 */
export function spawnApiIn(
  ws: BenchWorkspace,
  services: BenchServices,
  dir: string,
  databaseUrl: string,
  port: number,
  adminToken: string,
  extra: Record<string, string> = {},
): ChildProcess {
  return startProcess(ws, 'api/server.ts', webEnv(ws, services, port, adminToken, { HUB_QUEUE_PREFIX: `ab${port}`, ...extra }, databaseUrl), dir);
}

/** `count` shares of the hub at `h` (its first frontend, one new environment), created through the API 8 at a time: the environment and the zIds in order. */
export async function createShares(call: ReturnType<typeof jsonClient>, h: string, count: number): Promise<{ envZId: string; zIds: string[] }> {
  const envZId = (await call('POST', `${h}/environments`, { description: 'agent' })).json.envZId as string;
  const frontendId = (await call('GET', `${h}/frontends`)).json[0].id as string;
  const zIds: string[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const i = next++;
        const r = await call('POST', `${h}/shares`, { name: `share-${i}`, frontendIds: [frontendId], target: 'http://10.0.0.5:8080', envZId });
        if (r.status !== 201) throw new Error(`creating a share failed: ${r.status} ${r.text}`);
        zIds[i] = r.json.zId;
      }
    }),
  );
  return { envZId, zIds };
}

/** /proc/<pid>/stat fields after the command name (Linux): [0] state, [1] ppid, [11..14] utime stime cutime cstime. */
function procStat(pid: number | string | undefined): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  } catch {
    return undefined;
  }
}

/** CPU milliseconds (user + system) a process has used so far; with `reaped`, also its exited children's (100 ticks/s). */
export function cpuMs(pid: number | string | undefined, reaped = false): number {
  const f = procStat(pid);
  if (!f) return NaN;
  return (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) * 10;
}

/** CPU milliseconds a process has used so far, split into user and system (kernel) time. */
export function cpuSplitMs(pid: number | string | undefined): { user: number; sys: number } {
  const f = procStat(pid);
  if (!f) return { user: NaN, sys: NaN };
  return { user: Number(f[11]) * 10, sys: Number(f[12]) * 10 };
}

/**
 * CPU milliseconds (user + system) the threads of a process have run so far, from the scheduler's own clock
 * (/proc/PID/task/TID/schedstat, nanoseconds): precise, where /proc/PID/stat counts 10 ms ticks, which over a few
 * seconds of a busy process is a sample of a few hundred ticks (several per cent of noise). Threads that exited are
 * not counted.
 */
export function schedCpuMs(pid: number | string | undefined): number {
  if (pid === undefined) return NaN;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return NaN;
  }
  // a thread that exited meanwhile counts nothing
  return tids.reduce((sum, tid) => sum + (threadCpuMs(pid, tid) || 0), 0);
}

/** CPU milliseconds one thread of a process has run so far (its schedstat); NaN when it is gone. */
function threadCpuMs(pid: number | string, tid: number | string): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return NaN;
  }
}

/**
 * Context switches of a process's main thread so far (voluntary: it waited, e.g. for epoll with nothing to read;
 * involuntary: the scheduler took the CPU away), from /proc/PID/status; NaN when it is gone.
 */
export function contextSwitches(pid: number | string | undefined): { voluntary: number; involuntary: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const count = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
    return { voluntary: count('voluntary_ctxt_switches'), involuntary: count('nonvoluntary_ctxt_switches') };
  } catch {
    return { voluntary: NaN, involuntary: NaN };
  }
}

/**
 * CPU milliseconds the main thread of a process has run so far (schedstat): the JavaScript, the collector when it runs
 * single-threaded, the kernel's work for its system calls; what the process's total adds beyond it is its helper
 * threads (V8's optimizing compiler and parallel collector, libuv's pool).
 */
export function mainThreadCpuMs(pid: number | string | undefined): number {
  return pid === undefined ? NaN : threadCpuMs(pid, pid);
}

/**
 * CPU milliseconds of a process and its children (the edge's workers, nginx's worker), from /proc: the total from the
 * scheduler's clock (schedstat, precise), the kernel part from the tick counts (stat).
 */
export function treeCpuMs(pid: number | undefined): { total: number; sys: number } {
  const total = { total: schedCpuMs(pid), sys: cpuSplitMs(pid).sys };
  for (const child of childPids(pid)) {
    total.total += schedCpuMs(child);
    total.sys += cpuSplitMs(child).sys;
  }
  return total;
}

/** Context switches of a process and its children (nginx's master and its worker), as contextSwitches counts them. */
export function treeContextSwitches(pid: number | undefined): { voluntary: number; involuntary: number } {
  const total = contextSwitches(pid);
  for (const child of childPids(pid)) {
    const counts = contextSwitches(child);
    total.voluntary += counts.voluntary;
    total.involuntary += counts.involuntary;
  }
  return total;
}

/** The live children of a process (each process's parent is in its /proc/PID/stat). */
function childPids(pid: number | string | undefined): string[] {
  if (pid === undefined) return [];
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && procStat(entry)?.[1] === String(pid));
}

/** CPU milliseconds of a PostgreSQL instance: the postmaster, its live backends and parallel workers, and the reaped. */
export function postgresCpuMs(dataDir: string): number {
  const postmaster = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0].trim();
  let total = cpuMs(postmaster, true);
  for (const child of childPids(postmaster)) total += cpuMs(child);
  return total;
}

/**
 * The CPU of named processes over a stretch of work: `start()` reads each one's CPU milliseconds now; the snapshot's
 * `per(units)` is what each spent since, per unit of work, in microseconds; `describe` prints it (`web 41.2, postgres
 * 8.0 µs/request`). A process it cannot read counts NaN.
 */
export function cpuMeter(readers: Record<string, () => number>): { start(): { per(units: number): Record<string, number> } } {
  const read = () => Object.fromEntries(Object.entries(readers).map(([name, r]) => [name, r()]));
  return {
    start() {
      const before = read();
      return {
        per(units) {
          const after = read();
          return Object.fromEntries(Object.keys(readers).map((name) => [name, ((after[name] - before[name]) * 1000) / units]));
        },
      };
    },
  };
}

/** `name µs, name µs ... per <unit>` from several `per()` results: the median of each process. */
export function describeCpu(samples: Record<string, number>[], unit: string): string {
  if (samples.length === 0) return '';
  const names = Object.keys(samples[0]);
  return `CPU ${names.map((n) => `${n} ${median(samples.map((s) => s[n])).toFixed(1)}`).join(', ')} µs per ${unit}`;
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` at once; returns the elapsed milliseconds. */
export async function timed(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await task(next++);
    }),
  );
  return performance.now() - started;
}

/** The nearest-rank p-th percentile (0 < p <= 100). */
export function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** The middle value; for an even count the mean of the two middle ones (the upper one alone is the better of two rounds). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * nginx as the reference proxy of the edge benches: one worker, keep-alive to the same backend, the same forwarding
 * headers the edge sets. With `tls`, it listens with TLS and HTTP/2 (and lifts its cap of 1000 requests per
 * connection: h2load does not reconnect). Resolves with its port and process; stopped with the workspace.
 *
 * Its idle upstream connections are kept up to more than any bench's concurrent requests (`keepalive 1024`), as the
 * edge's pool keeps one per request in flight: with `keepalive 64` and h2load's 200 concurrent streams nginx closed
 * and reopened backend connections all the time (the backend spent 40 µs per request behind it against 20-24 behind
 * the edge), and the HTTP/2 comparison flattered the edge by half.
 */
export async function startNginxProxy(
  ws: BenchWorkspace,
  backendPort: number,
  tls?: { certFile: string; keyFile: string },
): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const dir = path.join(ws.work, 'nginx');
  mkdirSync(dir, { recursive: true });
  const listen = tls
    ? `listen 127.0.0.1:${port} ssl http2;
    ssl_certificate ${tls.certFile};
    ssl_certificate_key ${tls.keyFile};
    keepalive_requests 10000000;`
    : `listen 127.0.0.1:${port};`;
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream backend { server 127.0.0.1:${backendPort}; keepalive 1024; }
  server {
    ${listen}
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
    }
  }
}
`,
  );
  const nginx = spawn('nginx', ['-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'inherit' });
  ws.onCleanup(() => stopChild(nginx));
  return { port, child: nginx };
}

/**
 * A hub with its default environment and one ACTIVE share of `target` on the public frontend per entry of `shares`,
 * written straight to PostgreSQL (the edge benches measure the data plane, not the API): their ids and hosts.
 */
export async function benchShares(
  db: pg.Client,
  target: string,
  shares: { name: string; inspect?: boolean }[],
): Promise<{ hubId: string; zIds: string[]; hosts: string[] }> {
  const hubId = `bench-${randomBytes(4).toString('hex')}`;
  const envZId = `e${randomBytes(6).toString('hex')}`;
  await db.query(`INSERT INTO hubs (id, name) VALUES ($1, 'bench')`, [hubId]);
  await db.query(`INSERT INTO environments (env_z_id, hub_id, description, created_by, is_default) VALUES ($1, $2, 'default', 'bench', true)`, [envZId, hubId]);
  const frontend = (await db.query(`SELECT id, url_template FROM frontends WHERE public_name = 'public' AND hub_id IS NULL`)).rows[0];
  const zIds: string[] = [];
  for (const share of shares) {
    const zId = randomBytes(6).toString('hex');
    await db.query(
      `INSERT INTO shares (z_id, hub_id, env_z_id, name, frontend_id, frontend_endpoint, target, status, created_by, inspect)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'ACTIVE', 'bench', $8)`,
      [zId, hubId, envZId, share.name, frontend.id, frontend.url_template.replace('{token}', zId), target, share.inspect ?? false],
    );
    await db.query(`INSERT INTO share_frontends (share_z_id, frontend_id, position) VALUES ($1, $2, 0)`, [zId, frontend.id]);
    zIds.push(zId);
  }
  return { hubId, zIds, hosts: zIds.map((zId) => `${zId}.share.localhost`) };
}

/**
 * autocannon, with the rate of a run bounded by `amount` measured to its last response. autocannon 9 ends such a run
 * at its next one-second tick, so its `duration` is at least a second however fast the answers came: 1,000 requests
 * answered in 0.3 s read as ~1,000 req/s, and two sides of a comparison both faster than that read as equal. For a
 * run bounded by `duration`, autocannon's own figure stands. `seconds` is the time the rate is taken over.
 */
export async function loadTest(options: autocannon.Options): Promise<autocannon.Result & { seconds: number; rps: number }> {
  const started = performance.now();
  let last = started;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(options, (err, r) => (err ? reject(err) : resolve(r)));
    if (options.amount) run.on('response', () => (last = performance.now()));
  });
  const seconds = options.amount ? Math.max(0.001, (last - started) / 1000) : result.duration;
  return Object.assign(result, { seconds, rps: result.requests.total / seconds });
}

/**
 * An edge's own view of its run time (prom-client's default metrics on its metrics port): GC seconds so far, in all
 * and by kind (minor: the young generation's scavenges; major: mark-compact; incremental) with how many, and the event-loop delay
 * since the previous scrape (prom-client resets its delay histogram on each).
 */
export async function edgeRuntime(
  port: number,
): Promise<{ gcSeconds: number; gcByKind: Record<string, number>; gcCountByKind: Record<string, number>; delayMeanMs: number; delayP99Ms: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const sum = (re: RegExp) => [...text.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
  // the collector's histogram by kind: its `sum` (seconds) or its `count`
  const byKind = (series: 'sum' | 'count') => {
    const out: Record<string, number> = {};
    for (const m of text.matchAll(new RegExp(`^edgehub_nodejs_gc_duration_seconds_${series}\\{[^}]*kind="(\\w+)"[^}]*\\} (\\S+)$`, 'gm')))
      out[m[1]] = (out[m[1]] ?? 0) + Number(m[2]);
    return out;
  };
  return {
    gcSeconds: sum(/^edgehub_nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm),
    gcByKind: byKind('sum'),
    gcCountByKind: byKind('count'),
    delayMeanMs: sum(/^edgehub_nodejs_eventloop_lag_mean_seconds(?:\{[^}]*\})? (\S+)$/gm) * 1000,
    delayP99Ms: sum(/^edgehub_nodejs_eventloop_lag_p99_seconds(?:\{[^}]*\})? (\S+)$/gm) * 1000,
  };
}
