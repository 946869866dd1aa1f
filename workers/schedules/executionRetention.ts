import { config } from '../../shared/config.js';
import { pruneMachineExecutions } from '../../domain/jobs/enqueue.js';
import { logger } from '../../shared/logger.js';
import { durationMs } from '../../shared/durations.js';
import { defineSchedule } from '../schedule.js';

/** Hourly: finished executions the clock or a scheduler started, older than HUB_SCHEDULED_EXECUTION_RETENTION. */
export default defineSchedule({
  name: 'prune-machine-executions',
  cron: '0 41 * * * *',
  run: async () => {
    const deleted = await pruneMachineExecutions(durationMs(config().scheduledExecutionRetention)!);
    if (deleted) logger.info({ deleted }, 'pruned scheduled executions');
  },
});
