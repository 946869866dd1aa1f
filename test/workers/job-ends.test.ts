/**
 * The end of a job a web process waits for (domain/jobs/jobEnds.ts): the worker publishes it on the channel the job's
 * data names once BullMQ has recorded it (its result, or its failure for good, never a failure it will retry); a
 * waiter that hears nothing (a job naming no channel, a message lost while the subscriber's connection was down)
 * reads its job instead. A channel that is not a web process's job-ends channel is refused with the job's data.
 */
import test from 'ava';
import { Job } from 'bullmq';
import { z } from 'zod';
import { enqueueJob } from '../../domain/jobs/enqueue.js';
import { jobEndsChannel, jobEndsConnectionName, waitForJobEnd, type JobEnd } from '../../domain/jobs/jobEnds.js';
import { queue } from '../../domain/jobs/queues.js';
import { config } from '../../shared/config.js';
import { newId } from '../../shared/ids.js';
import { createRedis, redis } from '../../shared/redis.js';
import { defineProcessor, permanentFailure } from '../../workers/processor.js';
import { useStack, waitFor } from '../helpers/stack.js';

const probe = defineProcessor({
  type: 'system.probe',
  payload: z.object({ n: z.number().int(), fail: z.enum(['never', 'once', 'always']) }).strict(),
  async handle(ctx) {
    if (ctx.payload.fail === 'always') throw permanentFailure(`refused ${ctx.payload.n}`);
    if (ctx.payload.fail === 'once' && ctx.attempt === 1) throw new Error(`first attempt of ${ctx.payload.n} failed`);
    return { ran: ctx.payload.n, attempt: ctx.attempt };
  },
});

// the workers run in this process, on the stack's Redis
useStack(test, { processors: [probe] });

/** Reads nothing: a wait with it ends only through the published message (or times out). */
const deaf = async (): Promise<JobEnd | undefined> => undefined;

/** The job's end as Redis holds it. */
const fromJob = (id: string) => async (): Promise<JobEnd | undefined> => {
  const state = await queue('system').getJobState(id);
  if (state !== 'completed' && state !== 'failed') return undefined;
  const job = await Job.fromId(queue('system'), id);
  return state === 'completed' ? { id, ok: true, value: job!.returnvalue } : { id, ok: false, reason: job!.failedReason };
};

const add = (id: string, payload: z.infer<typeof probe.payload>, replyTo?: string) =>
  enqueueJob({
    id,
    type: 'system.probe',
    hubId: null,
    payload: payload as Record<string, unknown>,
    createdBy: 'test',
    replyTo,
    jobOptions: { attempts: 2, backoff: { type: 'fixed', delay: 10 } },
  });

const outcome = (finished: Promise<unknown>) =>
  finished.then(
    (value) => ({ value }),
    (err: Error) => ({ error: err.message }),
  );

test.serial("the worker publishes a job's end on the channel its data names: its result, or its failure for good", async (t) => {
  const channel = await jobEndsChannel();
  const ids = { ok: newId(), retried: newId(), refused: newId() };
  const ends = Object.fromEntries(Object.entries(ids).map(([k, id]) => [k, outcome(waitForJobEnd(id, Date.now() + 30_000, deaf).finished)]));
  await add(ids.ok, { n: 1, fail: 'never' }, channel);
  await add(ids.retried, { n: 2, fail: 'once' }, channel);
  await add(ids.refused, { n: 3, fail: 'always' }, channel);
  t.deepEqual(await ends.ok, { value: { ran: 1, attempt: 1 } });
  t.deepEqual(await ends.retried, { value: { ran: 2, attempt: 2 } }, 'the failure that was retried is not its end');
  t.deepEqual(await ends.refused, { error: 'refused 3' });
});

test.serial('a job that names no channel: its waiter reads its end from the job', async (t) => {
  const id = newId();
  const end = waitForJobEnd(id, Date.now() + 30_000, fromJob(id));
  await add(id, { n: 4, fail: 'never' });
  t.deepEqual(await outcome(end.finished), { value: { ran: 4, attempt: 1 } });
});

test.serial("when the subscriber's connection comes back, each waiter reads its job, and the channel is heard again", async (t) => {
  const channel = await jobEndsChannel();
  // a job that ended while nobody heard, and a waiter whose timed readings never come: only the connection's return
  // makes it read its job
  const id = newId();
  await add(id, { n: 5, fail: 'never' });
  await waitFor(async () => (await queue('system').getJobState(id)) === 'completed', { what: 'the job to complete' });
  const missed = outcome(waitForJobEnd(id, Date.now() + 30_000, fromJob(id), [120_000]).finished);
  const clients = (await redis().call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
  const ours = clients.split('\n').find((line) => line.includes(` name=${jobEndsConnectionName()} `));
  t.truthy(ours, 'the subscriber connection is named');
  await redis().call('CLIENT', 'KILL', 'ID', /\bid=(\d+)/.exec(ours!)![1]!);
  t.deepEqual(await missed, { value: { ran: 5, attempt: 1 } });

  const next = newId();
  const heard = outcome(waitForJobEnd(next, Date.now() + 30_000, deaf).finished);
  await add(next, { n: 6, fail: 'never' }, channel);
  t.deepEqual(await heard, { value: { ran: 6, attempt: 1 } });
});

test.serial("a job whose reply channel is not a web process's job-ends channel is refused, and nothing is published there", async (t) => {
  const listener = createRedis('worker');
  const heard: string[] = [];
  listener.on('message', (_channel: string, message: string) => heard.push(message));
  const elsewhere = `${config().queuePrefix}:inspect:elsewhere`;
  try {
    await listener.subscribe(elsewhere);
    const job = await queue('system').add('system.probe', { executionId: newId(), hubId: null, payload: { n: 7, fail: 'never' }, replyTo: elsewhere });
    await waitFor(async () => (await job.getState()) === 'failed', { what: 'the job to be refused' });
    t.regex((await queue('system').getJob(job.id!))!.failedReason, /job data refused/);
    // a job after it, heard on our channel: whatever the worker published for the refused one went out before
    const next = newId();
    const heardNext = outcome(waitForJobEnd(next, Date.now() + 30_000, deaf).finished);
    await add(next, { n: 8, fail: 'never' }, await jobEndsChannel());
    t.deepEqual(await heardNext, { value: { ran: 8, attempt: 1 } });
    await redis().publish(elsewhere, 'marker');
    await waitFor(async () => heard.includes('marker'), { what: 'the marker' });
    t.deepEqual(heard, ['marker']);
  } finally {
    listener.disconnect();
  }
});
