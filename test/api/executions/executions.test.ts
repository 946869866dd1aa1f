import test from 'ava';
import { z } from 'zod';
import { dispatch, enqueue, pruneMachineExecutions, sweepExecutions } from '../../../domain/jobs/enqueue.js';
import { Execution } from '../../../domain/models/Execution.js';
import { defineProcessor, permanentFailure } from '../../../workers/processor.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';

/** How often each execution's work actually ran (the observable side effect of the sample job). */
const runs = new Map<string, number>();
const gates = new Map<string, () => void>();
const finalFailures: string[] = [];

const sample = defineProcessor({
  type: 'system.sample',
  payload: z.object({ failTimes: z.number().optional(), fatal: z.boolean().optional(), hold: z.boolean().optional(), n: z.number().optional() }).strict(),
  async handle(ctx) {
    const id = ctx.execution.id;
    runs.set(id, (runs.get(id) ?? 0) + 1);
    const p = ctx.payload as { failTimes?: number; fatal?: boolean; hold?: boolean };
    if (p.hold) await new Promise<void>((resolve) => gates.set(id, resolve));
    if (p.fatal) throw permanentFailure('the sample was told to fail for good');
    if (ctx.attempt <= (p.failTimes ?? 0)) throw new Error(`planned failure ${ctx.attempt}`);
    return { ranOnAttempt: ctx.attempt };
  },
  async onFinalFailure(ctx) {
    finalFailures.push(ctx.execution.id);
  },
});

const stack = useStack(test, { processors: [sample] });
stack.onStop(async () => {
  for (const open of gates.values()) open();
});
let hub: HubFixture;
test.before(async () => {
  hub = await stack.hub();
});

const fastRetry = { attempts: 4, backoff: { type: 'fixed', delay: 30 } };
const start = (payload: Record<string, unknown>, jobOptions = fastRetry) =>
  enqueue({ type: 'system.sample', hubId: hub.hubId, resourceType: 'sample', resourceId: 'r1', payload, createdBy: 'test', jobOptions });
const get = (id: string) => hub.call('GET', `${hub.h}/executions/${id}`);
const settled = (id: string) =>
  waitFor(
    async () => {
      const r = await get(id);
      return ['SUCCEEDED', 'FAILED'].includes(r.json.status) ? r.json : undefined;
    },
    { what: `execution ${id} to finish` },
  );

test('an execution moves QUEUED -> RUNNING -> SUCCEEDED and is visible over HTTP', async (t) => {
  const execution = await start({ hold: true });
  t.is(execution.status, 'QUEUED');
  const running = await waitFor(
    async () => {
      const r = await get(execution.id);
      return r.json.status === 'RUNNING' ? r.json : undefined;
    },
    { what: 'RUNNING' },
  );
  t.truthy(running.startedAt);
  t.is(running.finishedAt, null);
  gates.get(execution.id)!();
  const done = await settled(execution.id);
  t.is(done.status, 'SUCCEEDED');
  t.is(done.processId, execution.id, 'processId is the BullMQ job id');
  t.is(done.type, 'system.sample');
  t.is(done.resourceType, 'sample');
  t.is(done.resourceId, 'r1');
  t.is(done.createdBy, 'test');
  t.is(done.error, null);
  t.truthy(done.finishedAt);
  for (const prefix of [hub.h, hub.h2]) {
    const found = await hub.call('GET', `${prefix}/executions:find?processId=${execution.processId}`);
    t.is(found.status, 200);
    t.is(found.json.id, execution.id);
  }
});

test('a job that throws is retried with backoff and then succeeds', async (t) => {
  const execution = await start({ failTimes: 2 });
  const done = await settled(execution.id);
  t.is(done.status, 'SUCCEEDED');
  t.is(done.attempts, 3);
  t.deepEqual(done.result, { ranOnAttempt: 3 }, 'what the job returned');
  t.is(runs.get(execution.id), 3);
  t.is(done.error, null, 'the error of a failed attempt is cleared on success');
});

test('a job that keeps failing ends FAILED with its error, once', async (t) => {
  const execution = await start({ failTimes: 99 });
  const done = await settled(execution.id);
  t.is(done.status, 'FAILED');
  t.is(done.attempts, 4);
  t.regex(done.error, /planned failure 4/);
  t.is(finalFailures.filter((id) => id === execution.id).length, 1);
});

test('a permanent failure is not retried', async (t) => {
  const execution = await start({ fatal: true });
  const done = await settled(execution.id);
  t.is(done.status, 'FAILED');
  t.is(done.attempts, 1);
  t.is(runs.get(execution.id), 1);
  t.regex(done.error, /told to fail for good/);
});

test('a duplicate enqueue of one execution runs the work once', async (t) => {
  const execution = await start({ hold: true });
  await Promise.all([dispatch(execution), dispatch(execution), dispatch(execution)]);
  await waitFor(async () => gates.has(execution.id), { what: 'the job to start' });
  gates.get(execution.id)!();
  await settled(execution.id);
  // dispatching after it finished must not run it again either
  await dispatch(execution);
  await new Promise((r) => setTimeout(r, 300));
  t.is(runs.get(execution.id), 1);
});

// serial: the sweeper looks at every execution, so no other test may have one in flight meanwhile
test.serial('the sweeper adds the job of an execution that Redis never received', async (t) => {
  // what enqueue leaves behind when Redis is away: a QUEUED row without a job
  const orphan = await Execution.create({
    id: 'orphan-1',
    processId: 'orphan-1',
    hubId: hub.hubId,
    type: 'system.sample',
    resourceType: null,
    resourceId: null,
    status: 'QUEUED',
    payload: {},
    createdBy: 'test',
  });
  await new Promise((r) => setTimeout(r, 50));
  t.is(await sweepExecutions(0), 1);
  const done = await settled(orphan.id);
  t.is(done.status, 'SUCCEEDED');
  t.is(await sweepExecutions(0), 0, 'nothing left to sweep');
});

test('executions list is paged, sortable and filterable; hubs are isolated', async (t) => {
  const other = await stack.hub();
  const theirs = await enqueue({ type: 'system.sample', hubId: other.hubId, createdBy: 'them', payload: {} });
  await settled((await start({ fatal: true })).id);
  await settled((await start({})).id);
  const list = await hub.call('GET', `${hub.h}/executions?sort=createdAt,asc&size=2`);
  t.is(list.status, 200);
  t.is(list.json.content.length, 2);
  t.true(list.json.totalElements >= 5);
  t.true(list.json.content[0].createdAt <= list.json.content[1].createdAt);
  t.false(list.json.content.some((e: any) => e.id === theirs.id));
  const failed = await hub.call('GET', `${hub.h}/executions?status=FAILED&size=100`);
  t.true(failed.json.content.length >= 1);
  t.true(failed.json.content.every((e: any) => e.status === 'FAILED'));
  t.is((await hub.call('GET', `${hub.h}/executions/${theirs.id}`)).status, 404, "another hub's execution is not found");
  t.is((await hub.call('GET', `${hub.h}/executions:find?processId=${theirs.processId}`)).status, 404);
  t.is((await hub.call('GET', `${other.h}/executions/${theirs.id}`)).status, 403, "another hub's path is forbidden");
  t.is((await hub.call('GET', `${hub.h}/executions:find`)).status, 400, 'processId is required');
  t.is((await hub.call('GET', `${hub.h}/executions?sort=payload`)).status, 400);
});

test.serial('finished executions the clock or a scheduler started are pruned after the retention; the audit trail stays', async (t) => {
  const hub2 = await stack.hub();
  const day = 86_400_000;
  const row = (id: string, createdBy: string, status: 'SUCCEEDED' | 'FAILED' | 'RUNNING', ageMs: number) => {
    const at = new Date(Date.now() - ageMs);
    return {
      id,
      processId: id,
      hubId: hub2.hubId,
      type: 'system.sample',
      resourceType: null,
      resourceId: null,
      status,
      payload: {},
      createdBy,
      createdAt: at,
      startedAt: at,
      finishedAt: status === 'RUNNING' ? null : at,
    };
  };
  await Execution.bulkCreate([
    row('old-clock', 'clock', 'SUCCEEDED', 10 * day),
    row('old-scheduler', 'scheduler', 'FAILED', 10 * day),
    row('old-scheduler-running', 'scheduler', 'RUNNING', 10 * day),
    row('new-scheduler', 'scheduler', 'SUCCEEDED', day / 2),
    row('old-person', 'key-someone', 'SUCCEEDED', 10 * day),
  ]);
  t.is(await pruneMachineExecutions(7 * day, 1), 2, 'batches until done');
  const left = await hub2.call('GET', `${hub2.h}/executions?size=100&type=system.sample`);
  t.deepEqual(left.json.content.map((e: any) => e.id).sort(), ['new-scheduler', 'old-person', 'old-scheduler-running']);
  t.is(await pruneMachineExecutions(7 * day), 0);
});
