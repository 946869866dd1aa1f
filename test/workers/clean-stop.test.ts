import test from 'ava';
import { enqueue } from '../../domain/jobs/enqueue.js';
import { queue } from '../../domain/jobs/queues.js';
import { defineProcessor, NO_PAYLOAD } from '../../workers/processor.js';
import { useStack, waitFor } from '../helpers/stack.js';

/**
 * A clean stop of a worker (an upgrade, a scale-down) hands its jobs back: the jobs it is running finish within the
 * stop's grace period and are recorded as completed, and the jobs it had not started stay waiting for another worker.
 * None is left active in Redis, where it would wait for the stalled-job check of another worker and run again.
 */

const stack = useStack(test, { workers: false });

const runs: string[] = [];
const slow = defineProcessor({
  type: 'system.cleanStopTestJob',
  payload: NO_PAYLOAD,
  concurrency: 2,
  async handle(ctx) {
    runs.push(ctx.execution.id);
    await new Promise((r) => setTimeout(r, 1500));
    return { slept: true };
  },
});

test.serial('a clean stop under load lets running jobs finish and leaves none active or stalled', async (t) => {
  await stack.startWorkers([slow]);
  const executions = [];
  for (let i = 0; i < 6; i++) executions.push(await enqueue({ hubId: null, type: 'system.cleanStopTestJob', createdBy: 'test' }));
  // two of them running (the processor's concurrency), the others waiting
  await waitFor(async () => runs.length >= 2, { what: 'two jobs running' });
  await stack.stopWorkers();

  const started = [...runs];
  t.true(started.length >= 2, `started: ${started.length}`);
  const q = queue('system');
  t.is(await q.getActiveCount(), 0, 'no job left active by the stopped worker');
  for (const id of started) {
    const job = await q.getJob(id);
    t.is(await job?.getState(), 'completed', `job ${id} finished during the stop`);
    const row = (await stack.sql.query('SELECT status FROM executions WHERE id = $1', [id])).rows[0];
    t.is(row.status, 'SUCCEEDED', `execution ${id}`);
  }
  const waiting = executions.filter((e) => !started.includes(e.id));
  for (const e of waiting) t.is(await (await q.getJob(e.id))?.getState(), 'waiting', `job ${e.id} handed back`);

  // another worker takes what was handed back, and each job runs exactly once
  await stack.startWorkers([slow]);
  await waitFor(
    async () => {
      const { rows } = await stack.sql.query(`SELECT count(*)::int AS n FROM executions WHERE type = 'system.cleanStopTestJob' AND status = 'SUCCEEDED'`);
      return rows[0].n === executions.length;
    },
    { timeoutMs: 60_000, what: 'every job done' },
  );
  await stack.stopWorkers();
  t.is(runs.length, executions.length, 'each job ran once');
  t.is(new Set(runs).size, executions.length);
});
