import { runScheduledCheck, SCHEDULED_RUN_JOB } from '../../shared/commands/healthChecks.js';
import { defineProcessor } from '../runner.js';

export default defineProcessor({
  type: SCHEDULED_RUN_JOB,
  handle: async ({ payload }) => runScheduledCheck(String(payload.healthCheckId)),
});
