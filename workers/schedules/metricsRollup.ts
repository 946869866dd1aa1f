import { enqueue } from '../../domain/jobs/enqueue.js';
import { defineSchedule } from '../schedule.js';
import { METRICS_JOBS } from '../processors/metrics.js';

/*
 * The roll-up runs every minute and takes everything committed since the last one, so after downtime the first run
 * catches up (in bounded batches); it needs no window of its own. Pruning runs hourly.
 */
export default [
  defineSchedule({
    name: 'metrics-rollup',
    cron: '5 * * * * *',
    run: async () => {
      await enqueue({ type: METRICS_JOBS.rollUp, hubId: null, resourceType: 'metrics', createdBy: 'clock' });
    },
  }),
  defineSchedule({
    name: 'metrics-prune',
    cron: '30 17 * * * *',
    run: async () => {
      await enqueue({ type: METRICS_JOBS.prune, hubId: null, resourceType: 'metrics', createdBy: 'clock' });
    },
  }),
];
