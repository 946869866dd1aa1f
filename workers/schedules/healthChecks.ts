import { reconcileSchedules } from '../../domain/commands/healthChecks.js';
import { logger } from '../../shared/logger.js';
import { defineSchedule } from '../schedule.js';
import { config } from '../../shared/config.js';

/** Repairs health-check job schedulers that a Redis outage left out of step with the database. */
export default defineSchedule({
  name: 'health-check-schedules',
  cron: config().healthCheckReconcileCron,
  run: async () => {
    const { upserted, removed } = await reconcileSchedules();
    if (upserted || removed) logger.info({ upserted, removed }, 'health check schedules reconciled');
  },
});
