import { pruneUsage, rollUp } from '../rollup.js';
import { defineProcessor, NO_PAYLOAD } from '../processor.js';

export const METRICS_JOBS = { rollUp: 'metrics.rollUp', prune: 'metrics.prune' } as const;

/**
 * Roll-up and pruning of usage samples. Both are safe to run twice or at once (the roll-up watermark is locked and
 * moves with the sums it covers; pruning deletes only rolled-up samples), so retries need no care.
 */
export default [
  defineProcessor({
    type: METRICS_JOBS.rollUp,
    payload: NO_PAYLOAD,
    concurrency: 1,
    handle: async (ctx) => {
      const result = await rollUp();
      if (result.samples) ctx.log.info(result, 'usage rolled up');
      return { ...result };
    },
  }),
  defineProcessor({
    type: METRICS_JOBS.prune,
    payload: NO_PAYLOAD,
    concurrency: 1,
    handle: async (ctx) => {
      const result = await pruneUsage();
      if (result.samples || result.minuteBuckets) ctx.log.info(result, 'usage pruned');
      return result;
    },
  }),
];
