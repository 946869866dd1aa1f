/**
 * The `edge` process (Procfile): the data plane that serves shares. It runs
 * HUB_EDGE_WORKERS worker processes (default 1; on a machine of its own, one per CPU) that share the listening ports, each a complete edge
 * (its own routing table, change feed and meter); the primary only restarts a worker that dies and, on SIGTERM,
 * stops them all so that each writes its last counters.
 */
import cluster from 'node:cluster';
import { config } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import { logger } from '../shared/logger.js';
import { refuseWrongSecretKey } from '../shared/secretKeyProbe.js';
import { refuseUnreachableSentinels } from '../shared/redisSentinel.js';
import { isMain, onShutdown } from '../shared/shutdown.js';
import { startMetricsServer } from '../shared/telemetry/index.js';
import { startEdge } from './server.js';
import { backoffMs } from '../shared/backoff.js';
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
  logger.info({ httpPort: edge.httpPort, httpsPort: edge.httpsPort, routes: edge.routes.size, template: config().edge.publicFrontendTemplate }, 'edge listening');
  onShutdown(async () => {
    // stop accepting, let requests in flight finish, then write the last counters
    await edge.stop();
    await closeDb();
  });
}

function runPrimary(workers: number): void {
  // each worker accepts on the shared sockets itself (no hand-off through the primary)
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  let stopping = false;
  const failures: number[] = [];
  // a worker's index (0, 1, ...) stays with its replacement: it places the worker's metrics port
  const indexOf = new Map<number, number>();
  const fork = (index: number) => indexOf.set(cluster.fork({ HUB_PROCESS: 'edge', HUB_EDGE_WORKER_INDEX: String(index) }).id, index);
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    const index = indexOf.get(worker.id) ?? 0;
    indexOf.delete(worker.id);
    failures.push(Date.now());
    while (failures.length && failures[0] < Date.now() - 60_000) failures.shift();
    const delay = backoffMs(failures.length, { minMs: 100, maxMs: 10_000 });
    logger.error({ pid: worker.process.pid, code, signal, restartInMs: delay, failuresLastMinute: failures.length }, 'edge worker exited; restarting it');
    setTimeout(() => {
      if (!stopping) fork(index);
    }, delay);
  });
  for (let i = 0; i < workers; i++) fork(i);
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const alive = Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());
    if (!alive.length) process.exit(0);
    let left = alive.length;
    for (const w of alive) {
      w!.once('exit', () => {
        if (--left === 0) process.exit(0);
      });
      w!.process.kill('SIGTERM');
    }
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
