import { allQueues } from '../../domain/jobs/queues.js';
import { collectQueueDepths, metricsText } from '../../shared/telemetry/index.js';
import type { Routes } from '../router.js';

/** Prometheus scrape of this web process (admin token only; HUB_METRICS_PORT serves the same without the API). */
export default function routes({ admin }: Routes) {
  collectQueueDepths(allQueues);
  admin.get('/metrics', async (ctx) => {
    const { contentType, body } = await metricsText();
    ctx.type = contentType;
    ctx.body = body;
  });
}
