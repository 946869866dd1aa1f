/** Queue depths, read from Redis at scrape time by whichever process asks (the web process). */
import client from 'prom-client';
import { registry, scrapeHooks } from './registry.js';

const queueJobs = new client.Gauge({
  name: 'edgehub_queue_jobs',
  help: 'Jobs per queue and state (waiting, active, delayed, failed), read from Redis at scrape time',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
type CountingQueue = { name: string; getJobCounts(...states: string[]): Promise<Record<string, number>> };

/** Makes each scrape read the depth of these queues (a function, so queues are created lazily). */
export function collectQueueDepths(queues: () => CountingQueue[]): void {
  scrapeHooks.set('queues', async () => {
    queueJobs.reset();
    await Promise.all(
      queues().map(async (q) => {
        const counts = await q.getJobCounts(...QUEUE_STATES);
        for (const state of QUEUE_STATES) queueJobs.set({ queue: q.name, state }, counts[state] ?? 0);
      }),
    );
  });
}
