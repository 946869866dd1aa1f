/**
 * Jobs added straight through BullMQ (as anything with access to Redis or a queue UI could) with made-up data: the
 * worker refuses every job whose data does not match its processor's schema, records a FAILED execution saying
 * why, and runs nothing. A job naming an execution runs with that execution's stored data, and only as its type.
 */
import test from 'ava';
import type { Job } from 'bullmq';
import { z } from 'zod';
import { enqueue } from '../../domain/jobs/enqueue.js';
import { queue } from '../../domain/jobs/queues.js';
import { defineProcessor } from '../../workers/processor.js';
import { processors } from '../../workers/processors/index.js';
import { useStack, waitFor } from '../helpers/stack.js';

const runs: unknown[] = [];
const probe = defineProcessor({
  type: 'system.probe',
  payload: z.object({ n: z.number().int() }).strict(),
  async handle(ctx) {
    runs.push(ctx.payload);
    return { ran: ctx.payload.n };
  },
});

const stack = useStack(test, { processors: [probe] });

async function failed(job: Job): Promise<string> {
  await waitFor(async () => (await job.getState()) === 'failed', { what: `job ${job.id} failed` });
  return (await queue('system').getJob(job.id!))!.failedReason;
}

const execution = async (processId: string) => (await stack.sql.query('SELECT * FROM executions WHERE process_id = $1', [processId])).rows[0];

test.serial('every processor has a schema for its payload', async (t) => {
  for (const def of processors) t.truthy(def.payload?.safeParse, def.type);
});

test.serial('made-up data is refused before anything runs, and the refusal is recorded as a FAILED execution', async (t) => {
  const hub = await stack.hub();
  const forged: [string, unknown][] = [
    ['a payload of the wrong shape', { executionId: 'x1', hubId: null, payload: { n: 'one' } }],
    ['a field the processor does not take', { executionId: 'x2', hubId: null, payload: { n: 1, extra: true } }],
    ['no execution (as a scheduler would add it) for a type that is not scheduled', { hubId: hub.hubId, payload: { n: 1 }, scheduled: { createdBy: 'evil' } }],
    ['a bull-board form body', { name: 'system.probe', 'data[payload][n]': '1' }],
    ['no data', undefined],
  ];
  for (const [what, data] of forged) {
    const job = await queue('system').add('system.probe', data);
    const reason = await failed(job);
    t.regex(reason, /job data refused: it does not match the schema of 'system\.probe'/, what);
    const row = await waitFor(() => execution(job.id!), { what: 'the refused execution' });
    t.is(row.status, 'FAILED', what);
    t.is(row.type, 'system.probe');
    t.is(row.hub_id, null, 'no hub of the job data is written');
    t.deepEqual(row.payload, {}, 'no made-up payload is stored');
    t.is(row.error, reason);
  }
  t.deepEqual(runs, [], 'nothing ran');
  // a job of a type no processor has, in a queue that has workers
  const unknown = await queue('system').add('system.noSuchJob', { executionId: 'x3', hubId: null, payload: {} });
  t.is(await failed(unknown), "no processor for job type 'system.noSuchJob'");
  t.is((await waitFor(() => execution(unknown.id!), { what: 'the refused execution' })).status, 'FAILED');

  // the real thing still runs
  const real = await enqueue({ type: 'system.probe', hubId: hub.hubId, payload: { n: 7 }, createdBy: 'test' });
  await waitFor(async () => (await execution(real.id))?.status === 'SUCCEEDED', { what: 'the real job' });
  t.deepEqual(runs, [{ n: 7 }]);
});

test.serial("a job naming an execution runs that execution's stored data, and only as that execution's type", async (t) => {
  runs.length = 0;
  const hub = await stack.hub();
  // a real execution, held back from its job so that a forged one comes first
  const id = 'held-' + Date.now();
  await stack.sql.query(
    `INSERT INTO executions (id, process_id, hub_id, type, status, payload, created_by) VALUES ($1, $1, $2, 'system.probe', 'QUEUED', '{"n": 1}', 'test')`,
    [id, hub.hubId],
  );
  const forged = await queue('system').add('system.probe', { executionId: id, hubId: null, payload: { n: 666 } }, { jobId: id });
  await waitFor(async () => (await forged.getState()) === 'completed', { what: 'the job' });
  t.deepEqual(runs, [{ n: 1 }], "the stored payload, not the job's");
  const row = await execution(id);
  t.is(row.status, 'SUCCEEDED');
  t.is(row.hub_id, hub.hubId);

  // well-formed, naming an execution that does not exist: nothing runs
  runs.length = 0;
  const ghost = await queue('system').add('system.probe', { executionId: 'no-such-execution', hubId: hub.hubId, payload: { n: 5 } });
  await waitFor(async () => (await ghost.getState()) === 'completed', { what: 'the ghost job' });
  t.deepEqual((await queue('system').getJob(ghost.id!))!.returnvalue, { skipped: 'missing' });
  t.deepEqual(runs, []);
  t.is(await execution(ghost.id!), undefined, 'no execution is made up for it');

  // a job of another type naming an execution: refused, the execution untouched
  const other = await enqueue({ type: 'system.probe', hubId: hub.hubId, payload: { n: 2 }, createdBy: 'test' });
  await waitFor(async () => (await execution(other.id))?.status === 'SUCCEEDED', { what: 'the other job' });
  const unpublish = processors.find((d) => d.type === 'shares.unpublishShare')!;
  t.truthy(unpublish);
  const wrongType = await queue('shares').add('shares.unpublishShare', { executionId: other.id, hubId: hub.hubId, payload: { zId: 'whatever' } });
  await waitFor(async () => (await wrongType.getState()) === 'failed', { what: 'the wrong-type job' });
  t.regex((await queue('shares').getJob(wrongType.id!))!.failedReason, /is a 'system\.probe', not a 'shares\.unpublishShare'/);
  t.is((await execution(other.id)).status, 'SUCCEEDED');
});
