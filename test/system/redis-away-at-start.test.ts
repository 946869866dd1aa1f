import http from 'node:http';
import test from 'ava';
import { reconcileSchedules } from '../../domain/commands/healthChecks.js';
import { QueueEvents } from 'bullmq';
import { closeWithConnection, connectedQueue } from '../../domain/jobs/queues.js';
import { createRedis } from '../../shared/redis.js';
import { Execution } from '../../domain/models/Execution.js';
import { reconcileExecutions } from '../../workers/reconcile.js';
import { processors } from '../../workers/processors/index.js';
import { ownRedis, type StoppableRedis } from '../helpers/outage.js';
import { useStack, waitFor } from '../helpers/stack.js';

/**
 * A web process (or a clock) started while Redis is away: its queues have never had a ready connection, and BullMQ
 * holds every call of such a queue until Redis comes. Requests and passes that touch a queue must not wait with it:
 * PostgreSQL is the truth, and the clock's reconciliations repair Redis once it is back.
 */

let redis: StoppableRedis;
test.before(async () => {
  redis = await ownRedis();
  await redis.stop();
});
const stack = useStack(test, () => ({
  workers: false,
  env: { REDIS_URL: redis.url, HUB_HEALTH_CHECK_MIN_INTERVAL_SECONDS: '1', HUB_AUTH_FAILURE_LIMIT: '5' },
}));
test.after.always(async () => {
  await redis?.stop();
});

/** `work` within `ms`, or the test fails saying what hung (instead of ava's timeout). */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} still waiting after ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A GET from a local address of the caller's choosing (the throttles key on it), timed. */
function getFrom(localAddress: string, path: string, authorization: string): Promise<{ status: number; ms: number; retryAfter?: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(`${stack.baseUrl}${path}`, { localAddress, headers: { authorization, accept: 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, retryAfter: res.headers['retry-after'] }));
    });
    req.on('error', reject);
  });
}

test.serial(
  'health-check schedules, the queue UI, the authentication throttle and the clock reconciliation do not wait for a Redis that was never there',
  async (t) => {
    const hub = await stack.hub();
    const body = { name: 'api', method: 'GET', path: '/health', expectedStatus: 200, target: 'http://127.0.0.1:9/', intervalSeconds: 60 };
    const created = await within(5000, 'creating a scheduled check', hub.call('POST', `${hub.h}/health-checks`, { body }));
    t.is(created.status, 201, created.text);
    const gone = await within(5000, 'creating a second one', hub.call('POST', `${hub.h}/health-checks`, { body: { ...body, name: 'gone' } }));
    t.is(gone.status, 201, gone.text);
    const disabled = await within(5000, 'disabling it', hub.call('PATCH', `${hub.h}/health-checks/${gone.json.id}`, { body: { enabled: false } }));
    t.is(disabled.status, 200, disabled.text);
    t.is((await within(5000, 'deleting it', hub.call('DELETE', `${hub.h}/health-checks/${gone.json.id}`))).status, 204);

    const board = await within(8000, 'the queue UI', stack.call('GET', '/admin/queues/api/queues', { auth: stack.admin, contract: false }));
    t.is(board.status, 503, board.text);
    t.is(board.json.error, 'unavailable');
    t.is(board.headers.get('retry-after'), '5');
    const page = await within(8000, 'the queue UI page', stack.call('GET', '/admin/queues', { auth: stack.admin, contract: false }));
    t.is(page.status, 200, 'the page itself loads; its calls say why the queues are missing');
    const signOut = await stack.call('POST', '/admin/queues/sign-out', { auth: stack.admin, headers: { origin: stack.baseUrl }, body: {}, contract: false });
    t.is(signOut.status, 503, signOut.text);
    t.regex(signOut.json.message, /no session was revoked/);

    // failed authentications are counted in memory meanwhile, at once (from an address of their own: 127.0.0.2)
    const answers: { status: number; ms: number; retryAfter?: string }[] = [];
    for (let i = 0; i < 6; i++) answers.push(await getFrom('127.0.0.2', `${hub.h}/health-checks`, 'Bearer not-a-key'));
    t.deepEqual(
      answers.map((a) => a.status),
      [401, 401, 401, 401, 401, 429],
    );
    t.true(
      answers.every((a) => a.ms < 1000),
      `no 401 waits for Redis: ${answers.map((a) => a.ms).join(', ')} ms`,
    );
    t.truthy(answers[5].retryAfter);

    // a reader of queue events closes in bounded time while its connection retries (BullMQ's close() alone waits for
    // Redis): the stop of a process during an outage does not wait out its grace period
    const reader = new QueueEvents('pki', { connection: createRedis('worker'), prefix: 'outage-close' });
    reader.on('error', () => undefined);
    const closing = Date.now();
    await within(5000, 'closing a queue events reader', closeWithConnection(reader, { graceMs: 1000 }));
    t.true(Date.now() - closing < 3000, `closed in ${Date.now() - closing} ms`);

    // the clock's passes give up at once (or after their wait), they do not sit on the outage
    await t.throwsAsync(within(5000, 'reconciling schedules', reconcileSchedules()), { message: /redis|connection|reach/i });
    const outcome = await within(5000, 'reconciling executions', reconcileExecutions(processors, 0));
    t.deepEqual(outcome, { readded: 0, failed: 0, succeeded: 0 }, 'nothing settled without Redis');
    const caJob = await Execution.findOne({ where: { hubId: hub.hubId } });
    t.is(caJob?.status, 'QUEUED', 'the hub CA job waits in PostgreSQL');

    await redis.start();
    const healthChecks = await waitFor(() => connectedQueue('health-checks').catch(() => undefined), { what: 'the queue connected' });
    // nothing of the outage lands late: a call that had waited would have gone first on the fresh connection
    t.deepEqual(await healthChecks.getJobSchedulers(0, -1), [], 'no schedule call waited through the outage');

    // the reconciliation then makes Redis match the database: the enabled check's scheduler, none for the other
    t.deepEqual(await waitFor(() => reconcileSchedules().catch(() => undefined), { what: 'a reconciliation with Redis back' }), { upserted: 1, removed: 0 });
    const schedulers = await healthChecks.getJobSchedulers(0, -1);
    t.deepEqual(
      schedulers.map((s) => [s.key, s.every]),
      [[`health-check:${created.json.id}`, 60_000]],
    );
  },
);
