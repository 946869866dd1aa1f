import { config } from '../../shared/config.js';
import { sweepExecutions } from '../../shared/jobs.js';
import { defineSchedule } from '../schedule.js';

/** Re-adds jobs of executions that Redis never took (it was away at enqueue time) or lost. */
export default defineSchedule({
  name: 'sweep-executions',
  cron: config().sweepCron,
  run: async () => {
    await sweepExecutions();
  },
});
