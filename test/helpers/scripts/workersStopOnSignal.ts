/**
 * A process that runs the service's BullMQ workers (and opens every queue) and, on SIGUSR2, closes them the way a
 * process stops (workers, queues, the shared Redis connection, the database pool) without calling process.exit:
 * whether it then exits by itself says whether anything of Redis or BullMQ was left running. It prints `ready` once
 * the workers are up and `stopped` once every close returned.
 */
import { closeDb, initDb } from '../../../shared/db.js';
import { allQueues, closeQueues } from '../../../domain/jobs/queues.js';
import { closeRedis, readyRedis } from '../../../shared/redis.js';
import { startWorkers, stopWorkers } from '../../../workers/runner.js';
import { processors } from '../../../workers/processors/index.js';

await initDb();
const workers = startWorkers({ processors });
await Promise.all(workers.map((w) => w.waitUntilReady()));
await Promise.all(allQueues().map((q) => q.waitUntilReady()));
await (await readyRedis(10_000)).ping();
console.log('ready');
process.once('SIGUSR2', async () => {
  await stopWorkers(workers);
  await closeQueues();
  await closeRedis();
  await closeDb();
  console.log('stopped');
});
