import { reconcileSchedules } from '../../shared/commands/healthChecks.js';
import { logger } from '../../shared/logger.js';
import { defineSchedule } from '../schedule.js';

/** Repairs health-check job schedulers that a Redis outage left out of step with the database. */
export default defineSchedule({
  name: 'health-check-schedules',
  cron: process.env.HUB_HEALTH_CHECK_RECONCILE_CRON ?? '30 * * * * *',
  run: async () => {
    const { upserted, removed } = await reconcileSchedules();
    if (upserted || removed) logger.info({ upserted, removed }, 'health check schedules reconciled');
  },
});
