/**
 * The `edge` process (Procfile): the data plane that serves shares. It runs
 * HUB_EDGE_WORKERS worker processes (default 1; on a machine of its own, one per CPU) that share the listening ports, each a complete edge
 * (its own routing table, change feed and meter); the primary only restarts a worker that dies and, on SIGTERM,
 * stops them all so that each writes its last counters.
 */
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { config } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import { logger } from '../shared/logger.js';
import { refuseWrongSecretKey } from '../shared/secretKeyProbe.js';
import { refuseUnreachableSentinels } from '../shared/redisSentinel.js';
import { isMain, onShutdown } from '../shared/shutdown.js';
import { startMetricsServer } from '../shared/telemetry/index.js';
import { Supervisor } from '../shared/supervisor.js';
import { startEdge } from './server.js';
import { presetSetting, setting } from '../shared/settings.js';

async function runWorker(): Promise<void> {
  await initDb(); // the usage store writes through the shared pool
  await refuseWrongSecretKey();
  await refuseUnreachableSentinels();
  const edge = await startEdge();
  // HUB_METRICS_PORT: each worker this edge forked serves its own series on the port after the previous worker's (a
  // supervisor's child, npm start's, was given a port of its own)
  const listener = config().metricsListener;
  // HUB_EDGE_WORKER_INDEX is set by the edge's own primary on the workers it forks (not by npm start's supervisor)
  const index = setting('HUB_EDGE_WORKER_INDEX');
  await startMetricsServer(listener && index !== undefined ? { ...listener, port: listener.port + index } : (listener ?? null));
  logger.info(
    { httpPort: edge.httpPort, httpsPort: edge.httpsPort, routes: edge.routes.size, template: config().edge.publicFrontendTemplate },
    'edge listening',
  );
  onShutdown(async () => {
    // stop accepting, let requests in flight finish, then write the last counters
    await edge.stop();
    await closeDb();
  });
}

/**
 * The primary of HUB_EDGE_WORKERS workers: the supervisor of `npm start` (shared/supervisor.ts) with this file as the
 * child, each worker keeping its index (it places the worker's metrics port) when it is restarted; a worker that dies
 * is restarted after 100 ms, 200 ms ... at most 10 s. SIGTERM or SIGINT stops every worker gracefully, then exits.
 */
function runPrimary(workers: number): void {
  const supervisor = new Supervisor(
    [{ name: 'edge', script: fileURLToPath(import.meta.url), instances: workers, instanceEnv: (index) => ({ HUB_EDGE_WORKER_INDEX: String(index) }) }],
    { env: process.env, execArgv: process.execArgv, backoffMs: 100, maxBackoffMs: 10_000, log: (line) => logger.warn({}, line) },
  );
  supervisor.start();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void supervisor.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (isMain(import.meta.url) || cluster.isWorker) {
  presetSetting('HUB_PROCESS', 'edge');
  const workers = config().edge.workers;
  if (cluster.isPrimary && workers > 1) runPrimary(workers);
  else await runWorker();
}
