/** Job runs by type and outcome, and their durations (the worker). */
import client from 'prom-client';
import { JOB_BUCKETS, registry } from './registry.js';

type JobOutcome = 'succeeded' | 'failed' | 'skipped' | 'stalled';

export const jobsTotal = new client.Counter({
  name: 'edgehub_jobs_total',
  help: 'Job runs by type and outcome (failed includes a run whose retry is still to come)',
  labelNames: ['type', 'outcome'] as const,
  registers: [registry],
});

const jobDuration = new client.Histogram({
  name: 'edgehub_job_duration_seconds',
  help: 'Job run duration by type and outcome',
  labelNames: ['type', 'outcome'] as const,
  buckets: JOB_BUCKETS,
  registers: [registry],
});

/** Runs one job attempt and records its outcome and duration. A result `{skipped}` counts as skipped. */
export async function observeJob<T>(type: string, run: () => Promise<T>): Promise<T> {
  const end = jobDuration.startTimer({ type });
  try {
    const result = await run();
    const outcome: JobOutcome = result && typeof result === 'object' && 'skipped' in result ? 'skipped' : 'succeeded';
    jobsTotal.inc({ type, outcome });
    end({ outcome });
    return result;
  } catch (err) {
    jobsTotal.inc({ type, outcome: 'failed' });
    end({ outcome: 'failed' });
    throw err;
  }
}
