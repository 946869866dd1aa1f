/**
 * Enrollment throughput: end-to-end POST /hub/v2/{hubId}/client-certificates/enroll over HTTP with N concurrent
 * clients, through the real web process (JWT verification, token look-up, CSR parse + proof of possession, enqueue,
 * wait on QueueEvents) and the real worker process (BullMQ job, CA signature, spend + store in one transaction).
 * Baseline, measured in the same run: the raw node:crypto ECDSA P-256 / SHA-256 sign rate of the same key type over a
 * TBSCertificate-sized input. Target: >= 300 enrollments/s on a 2-core machine.
 *
 *   npm run bench:enroll          (BENCH_ENROLLMENTS, BENCH_CONCURRENCY, BENCH_WARMUP)
 *
 * Starts its own embedded PostgreSQL, redis-server, API and worker processes, and stops them.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Sequelize } from 'sequelize';
import { freePort, startPostgres, startRedis } from '../scripts/services.js';
import { migrate } from '../shared/migrate.js';
import { derToPem, encodeBitString, encodeSequence } from '../shared/pki/der.js';
import { buildName, nameDer, OID } from '../shared/pki/names.js';

const ENROLLMENTS = Number(process.env.BENCH_ENROLLMENTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 300);
const TIME_BUDGET_MS = 10 * 60_000;

const work = mkdtempSync(path.join(os.tmpdir(), 'edgehub-bench-'));
chmodSync(work, 0o755);
const cleanups: (() => Promise<unknown>)[] = [];
async function cleanUp() {
  for (const step of cleanups.reverse()) await step().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
}
setTimeout(() => {
  console.error(`bench exceeded its ${TIME_BUDGET_MS / 60_000} min budget; stopping`);
  void cleanUp().finally(() => process.exit(2));
}, TIME_BUDGET_MS).unref();

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** /proc/<pid>/stat fields after the command name (Linux): [0] state, [1] ppid, [11..14] utime stime cutime cstime. */
function procStat(pid: number | string | undefined): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used so far; with `reaped`, also its exited children's. */
function cpuSeconds(pid: number | string | undefined, reaped = false): number {
  const f = procStat(pid);
  if (!f) return NaN;
  return (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) / 100;
}

/** CPU seconds of a PostgreSQL instance: the postmaster, its live backends and the ones it reaped. */
function postgresCpuSeconds(dataDir: string): number {
  const postmaster = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0].trim();
  let total = cpuSeconds(postmaster, true);
  for (const entry of readdirSync('/proc')) {
    if (/^\d+$/.test(entry) && procStat(entry)?.[1] === postmaster) total += cpuSeconds(entry);
  }
  return total;
}

function startProcess(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  // BENCH_PROFILE=<dir> writes a V8 CPU profile of each process there
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', script], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  cleanups.push(() => stopChild(child));
  return child;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** A small JSON HTTP client on a keep-alive agent (lighter than fetch, so the load generator takes less CPU). */
function request(base: URL, method: string, urlPath: string, body?: unknown, auth?: string): Promise<{ status: number; json: any }> {
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

async function waitForHealth(base: URL): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await request(base, 'GET', '/healthz')).status === 200) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error('the API did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const ECDSA_WITH_SHA256 = Buffer.from('300a06082a8648ce3d040302', 'hex');

/** A PKCS#10 CSR for a fresh EC P-256 key, signed with it (as a device would make one). */
function deviceCsr(commonName: string): string {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const subject = nameDer(buildName([[OID.commonName, commonName], [OID.organization, 'Bench']]));
  const info = encodeSequence(Buffer.from([0x02, 0x01, 0x00]), subject, publicKey.export({ format: 'der', type: 'spki' }), Buffer.from([0xa0, 0x00]));
  return derToPem(encodeSequence(info, ECDSA_WITH_SHA256, encodeBitString(sign('sha256', info, privateKey))), 'CERTIFICATE REQUEST');
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` at once; returns the elapsed milliseconds. */
async function timed(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await task(next++);
    }),
  );
  return performance.now() - started;
}

/** Raw ECDSA P-256 / SHA-256 signatures per second over a TBSCertificate-sized input, for `ms` milliseconds. */
function rawSignRate(ms: number): number {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const tbs = randomBytes(420);
  let n = 0;
  const started = performance.now();
  while (performance.now() - started < ms) {
    for (let i = 0; i < 100; i++) sign('sha256', tbs, privateKey);
    n += 100;
  }
  return n / ((performance.now() - started) / 1000);
}

try {
  const postgres = await startPostgres(path.join(work, 'postgres'), { persistent: false, database: 'bench' });
  cleanups.push(() => postgres.stop());
  const redis = await startRedis(undefined);
  cleanups.push(() => redis.stop());
  const databaseUrl = postgres.url('bench');
  const migrator = new Sequelize(databaseUrl, { logging: false });
  await migrate(migrator);
  await migrator.close();

  const port = await freePort();
  const base = new URL(`http://127.0.0.1:${port}`);
  const adminToken = randomBytes(24).toString('base64url');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    HUB_ADMIN_TOKEN: adminToken,
    HUB_DATA_DIR: path.join(work, 'data'),
    HUB_SECRET_KEY: randomBytes(32).toString('hex'),
    PUBLIC_BASE_URL: base.origin,
    HUB_QUEUE_PREFIX: 'bench',
    HUB_DB_POOL_MAX: process.env.HUB_DB_POOL_MAX ?? '20',
  };
  const web = startProcess('api/server.ts', { ...env, HUB_PROCESS: 'web' });
  const worker = startProcess('workers/index.ts', { ...env, HUB_PROCESS: 'worker' });
  await waitForHealth(base);

  const admin = `Bearer ${adminToken}`;
  const hub = await request(base, 'POST', '/admin/v1/hubs', { name: 'bench' }, admin);
  const key = await request(base, 'POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { name: 'bench' }, admin);
  const bearer = `Bearer ${key.json.token}`;
  const hubId: string = hub.json.id;

  // every enrollment brings its own key, as devices do
  const csrs = Array.from({ length: WARMUP + ENROLLMENTS }, (_, i) => deviceCsr(`device-${i}.bench.example`));
  const sample = path.join(work, 'device.csr');
  writeFileSync(sample, csrs[0]);
  execFileSync('openssl', ['req', '-in', sample, '-verify', '-noout'], { stdio: 'ignore' }); // the generator makes real CSRs

  // setup (not measured): one token and its enrollment JWT per enrollment
  const total = WARMUP + ENROLLMENTS;
  const jwts: string[] = new Array(total);
  const setupMs = await timed(total, 16, async (i) => {
    const tok = await request(base, 'POST', `/hub/${hubId}/certificate-request-tokens`, { name: `device-${i}`, commonName: `device-${i}.bench.example` }, bearer);
    if (tok.status !== 201) throw new Error(`token: ${tok.status} ${JSON.stringify(tok.json)}`);
    const jwt = await request(base, 'GET', `/hub/v2/${hubId}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`, undefined, bearer);
    if (jwt.status !== 200) throw new Error(`jwt: ${jwt.status} ${JSON.stringify(jwt.json)}`);
    jwts[i] = jwt.json.jwt;
  });
  console.log(`setup: ${total} tokens + JWTs in ${(setupMs / 1000).toFixed(1)} s`);

  const failures: string[] = [];
  const enrollOne = async (i: number) => {
    const r = await request(base, 'POST', `/hub/v2/${hubId}/client-certificates/enroll`, { jwt: jwts[i], csr: csrs[i] });
    if (r.status !== 201) failures.push(`${r.status} ${JSON.stringify(r.json)}`);
  };
  await timed(WARMUP, CONCURRENCY, enrollOne); // JIT, pools, the hub's issuing CA
  const pgDir = path.join(work, 'postgres');
  const cpuBefore = {
    web: cpuSeconds(web.pid),
    worker: cpuSeconds(worker.pid),
    postgres: postgresCpuSeconds(pgDir),
    redis: cpuSeconds(redis.process.pid),
    bench: process.cpuUsage(),
  };
  const ms = await timed(ENROLLMENTS, CONCURRENCY, (i) => enrollOne(WARMUP + i));
  const benchCpu = process.cpuUsage(cpuBefore.bench);
  const perEnrollMs = (seconds: number) => ((seconds * 1000) / ENROLLMENTS).toFixed(2);
  const cpu = {
    web: perEnrollMs(cpuSeconds(web.pid) - cpuBefore.web),
    worker: perEnrollMs(cpuSeconds(worker.pid) - cpuBefore.worker),
    postgres: perEnrollMs(postgresCpuSeconds(pgDir) - cpuBefore.postgres),
    redis: perEnrollMs(cpuSeconds(redis.process.pid) - cpuBefore.redis),
    client: perEnrollMs((benchCpu.user + benchCpu.system) / 1e6),
  };
  const serviceCpuMs = Number(cpu.web) + Number(cpu.worker) + Number(cpu.postgres) + Number(cpu.redis);
  if (failures.length) throw new Error(`${failures.length} enrollments failed, e.g. ${failures[0]}`);
  const count = await request(base, 'GET', `/hub/${hubId}/client-certificates?size=1`, undefined, bearer);
  if (count.json.totalElements !== total) throw new Error(`expected ${total} certificates, found ${count.json.totalElements}`);

  const enrollRate = ENROLLMENTS / (ms / 1000);
  const signRate = rawSignRate(2000);
  console.log(`enrollments:   ${ENROLLMENTS} with ${CONCURRENCY} concurrent clients in ${(ms / 1000).toFixed(2)} s`);
  console.log(`end to end:    ${enrollRate.toFixed(0)} enrollments/s   (target >= 300)`);
  console.log(`baseline:      ${signRate.toFixed(0)} raw ECDSA P-256 signs/s (node:crypto, one core, same run)`);
  console.log(`cpu per enrollment: web ${cpu.web} ms, worker ${cpu.worker} ms, PostgreSQL ${cpu.postgres} ms, Redis ${cpu.redis} ms; load generator ${cpu.client} ms`);
  const cores = os.availableParallelism();
  console.log(`capacity:      ${((cores * 1000) / serviceCpuMs).toFixed(0)} enrollments/s if the service had all ${cores} cores to itself (${serviceCpuMs.toFixed(2)} CPU ms each; load average ${os.loadavg()[0].toFixed(1)} during the run)`);
  console.log(`ratio:         ${(enrollRate / signRate).toFixed(4)} (enrollments per raw signature time)`);
  await cleanUp();
  process.exit(enrollRate >= 300 ? 0 : 1);
} catch (err) {
  console.error(`bench failed: ${(err as Error).message}`);
  await cleanUp();
  process.exit(2);
}
