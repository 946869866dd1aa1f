import test from 'ava';
import { reconcileExecutions } from '../../workers/reconcile.js';
import { processors } from '../../workers/processors/index.js';
import { ownRedis, type StoppableRedis } from '../helpers/outage.js';
import { makeCsr } from '../helpers/pki.js';
import { useStack, waitFor } from '../helpers/stack.js';
import { assertRefused } from '../helpers/refusals.js';

/**
 * With Redis stopped, the web process's first wait for a job result used to block for ever on a
 * connection that retries without end. Every wait is bounded: 503 with a clear message, and the request is kept.
 */

let redis: StoppableRedis;
test.before(async () => {
  redis = await ownRedis();
});
const stack = useStack(test, () => ({ env: { REDIS_URL: redis.url, HUB_ISSUANCE_WAIT_MS: '1500' } }));
stack.onStop(async () => {
  await redis?.start();
});
test.after.always(async () => {
  await redis?.stop();
});

test('Redis stopped: issuing a certificate answers 503 within the wait, and completes once Redis is back', async (t) => {
  const hub = await stack.hub();
  const csr = await makeCsr('/CN=while-redis-is-down');
  await redis.stop();

  const answer = await Promise.race([
    hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'redis-down', value: csr } }),
    // unref'd: a timer left running would keep the test process alive for its 30 s after the answer came
    new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 30_000).unref()),
  ]);
  t.not(answer, 'hung', 'the request must be answered');
  if (answer === 'hung') return;
  assertRefused(t, answer, 503, 'unavailable', 'EH_QUEUE_UNAVAILABLE');

  // Redis back: the kept execution is swept into the queue and the certificate is issued
  await redis.start();
  await waitFor(async () => (await reconcileExecutions(processors, 0).catch(() => ({ readded: 0 }))).readded > 0, {
    what: 'the kept issuance to be re-added',
    timeoutMs: 60_000,
    intervalMs: 500,
  });
  const listed = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/client-certificates`);
      return r.json.content?.find((c: { name: string }) => c.name === 'redis-down');
    },
    { what: 'the certificate', timeoutMs: 60_000 },
  );
  t.truthy(listed);
});
