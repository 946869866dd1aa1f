import { closeDb, initDb } from '../shared/db.js';
import { logger } from '../shared/logger.js';
import { closeQueues } from '../domain/jobs/queues.js';
import { closeRedis } from '../shared/redis.js';
import { refuseUnreachableSentinels } from '../shared/redisSentinel.js';
import { refuseWrongSecretKey } from '../shared/secretKeyProbe.js';
import { isMain, onShutdown } from '../shared/shutdown.js';
import { startMetricsServer } from '../shared/telemetry/index.js';
import { processors, runWorkerStartHooks } from './processors/index.js';
import { startWorkers, stopWorkers } from './runner.js';
import { presetSetting } from '../shared/settings.js';

if (isMain(import.meta.url)) {
  presetSetting('HUB_PROCESS', 'worker');
  await initDb();
  await refuseWrongSecretKey();
  await refuseUnreachableSentinels();
  await runWorkerStartHooks();
  const workers = startWorkers({ processors });
  await startMetricsServer();
  logger.info({ types: processors.map((p) => p.type) }, 'workers started');
  // close() lets active jobs finish before the pools go
  onShutdown(async () => {
    await stopWorkers(workers);
    await closeQueues();
    await closeRedis();
    await closeDb();
  });
}
