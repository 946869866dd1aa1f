import { config } from '../../shared/config.js';
import { reconcileExecutions } from '../reconcile.js';
import { processors } from '../processors/index.js';
import { defineSchedule } from '../schedule.js';

/**
 * Re-adds jobs of executions that Redis never took (it was away at enqueue time) or lost, with their stored options;
 * finishes executions whose job failed, completed or vanished while PostgreSQL could not record it (reconciliation).
 */
export default defineSchedule({
  name: 'sweep-executions',
  cron: config().sweepCron,
  run: async () => {
    await reconcileExecutions(processors);
  },
});
