import test from 'ava';
import { enqueue, sweepExecutions } from '../../domain/jobs/enqueue.js';
import { freePort, startRedis, type LocalRedis } from '../../scripts/services/index.js';
import { connectedQueue } from '../../domain/jobs/queues.js';
import { Execution } from '../../domain/models/Execution.js';
import { defineProcessor, NO_PAYLOAD } from '../../workers/processor.js';
import { useStack, waitFor } from '../helpers/stack.js';

// This file stops Redis, so it runs its own redis-server instead of the shared one.
let redis: LocalRedis;
let port: number;
test.before(async () => {
  port = await freePort();
  redis = await startRedis(undefined, port);
});
const stack = useStack(test, () => ({
  env: { REDIS_URL: redis.url },
  processors: [defineProcessor({ type: 'system.sample', payload: NO_PAYLOAD, handle: async () => ({ ok: true }) })],
}));
test.after.always(async () => {
  await redis?.stop();
});

test.serial('healthz is 200 while PostgreSQL and Redis answer, 503 when Redis is down, 200 again after', async (t) => {
  const up = await stack.call('GET', '/healthz');
  t.is(up.status, 200);
  t.deepEqual(up.json, { status: 'ok' });

  await redis.stop();
  const down = await waitFor(
    async () => {
      const r = await stack.call('GET', '/healthz');
      return r.status === 503 ? r : undefined;
    },
    { what: '503' },
  );
  t.is(down.json.status, 'unavailable');
  t.is(down.json.postgres, 'ok');
  t.regex(down.json.redis, /unavailable/);
  // the queue UI's reads say so too (bull-board's own calls would fail inside it)
  const board = await stack.call('GET', '/admin/queues/api/queues', { auth: stack.admin, contract: false });
  t.is(board.status, 503, board.text);
  t.is(board.json.error, 'unavailable');

  // an enqueue while Redis is away leaves the execution QUEUED (the request does not hang or fail) ...
  const hubRes = await stack.call('POST', '/admin/v1/hubs', { auth: stack.admin, body: { name: 'while-down' } });
  t.is(hubRes.status, 201, 'PostgreSQL-only operations keep working');
  const execution = await enqueue({ type: 'system.sample', hubId: hubRes.json.id, createdBy: 'test', payload: {} });
  t.is(execution.status, 'QUEUED');

  redis = await startRedis(undefined, port);
  await waitFor(async () => (await stack.call('GET', '/healthz')).status === 200, { what: 'healthz 200 again' });

  // the 'system' queue was first made during the outage: its add gave up instead of waiting for Redis (no call of the
  // outage lands late, its job's data kept all along); its connection is ready now, so an add still waiting would
  // have gone first on it
  const system = await waitFor(() => connectedQueue('system').catch(() => undefined), { what: 'the system queue connected' });
  t.is(await system.getJob(execution.processId), undefined, 'no add waited through the outage');

  // ... and the sweeper hands it to Redis once it is back
  // (the hub created while Redis was away left its CA job QUEUED too: the sweeper re-adds both)
  t.true((await waitFor(() => sweepExecutions(0), { what: 'the sweeper to re-add the jobs' })) >= 2);
  const done = await waitFor(
    async () => {
      const row = await Execution.findByPk(execution.id);
      return row?.status === 'SUCCEEDED' ? row : undefined;
    },
    { what: 'the swept job to run' },
  );
  t.is(done.attempts, 1);
});
