import { z } from 'zod';
import { runScheduledCheck, SCHEDULED_RUN_JOB } from '../../domain/commands/healthChecks.js';
import { defineProcessor } from '../processor.js';

export default defineProcessor({
  type: SCHEDULED_RUN_JOB,
  // runs come from the check's job scheduler
  scheduled: true,
  payload: z.object({ healthCheckId: z.string().min(1).max(200) }).strict(),
  handle: async ({ payload }) => runScheduledCheck(String(payload.healthCheckId)),
});
