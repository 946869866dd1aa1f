/**
 * `npm start`: the whole service on one machine. Embedded PostgreSQL and a redis-server of its own unless
 * DATABASE_URL / REDIS_URL say otherwise, then migrations, then the web, worker, clock and edge processes (as the
 * Procfile runs them in production). Ctrl-C (or SIGTERM) stops every child it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { config, ConfigError, resetConfig } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import { migrate } from '../shared/migrate.js';
import { startPostgres, startRedis, type LocalPostgres, type LocalRedis } from './services.js';

let cfg;
try {
  cfg = config();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`edgehub: ${err.message}`);
    process.exit(2);
  }
  throw err;
}

const children: ChildProcess[] = [];
let pg: LocalPostgres | undefined;
let rd: LocalRedis | undefined;
let stopping = false;

async function stopAll(code: number): Promise<never> {
  if (stopping) process.exit(code);
  stopping = true;
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  await rd?.stop().catch(() => undefined);
  await pg?.stop().catch(() => undefined);
  process.exit(code);
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

try {
  const env: NodeJS.ProcessEnv = { ...process.env, HUB_DATA_DIR: cfg.dataDir, HUB_ADMIN_TOKEN: cfg.adminToken };
  if (!cfg.databaseUrl) {
    pg = await startPostgres(path.join(cfg.dataDir, 'postgres'), { persistent: true, database: 'edgehub' });
    env.DATABASE_URL = pg.url('edgehub');
  }
  if (!cfg.redisUrl) {
    rd = await startRedis(path.join(cfg.dataDir, 'redis'));
    env.REDIS_URL = rd.url;
  }
  Object.assign(process.env, env);
  resetConfig();
  await migrate(await initDb());
  await closeDb();

  for (const [name, script] of [
    ['web', 'api/server.ts'],
    ['worker', 'workers/index.ts'],
    ['clock', 'workers/clock.ts'],
    ['edge', 'edge/index.ts'],
  ] as const) {
    const child = spawn(process.execPath, ['--import', 'tsx', script], { env: { ...env, HUB_PROCESS: name }, stdio: 'inherit' });
    child.once('exit', (code, signal) => {
      if (stopping) return;
      console.error(`edgehub: ${name} exited (${signal ?? code}); stopping everything`);
      void stopAll(1);
    });
    children.push(child);
  }
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
