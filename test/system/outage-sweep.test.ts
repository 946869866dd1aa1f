/**
 * Every operation of the API during an outage of each store, with real resources in its path and a valid body for
 * each create: PostgreSQL away (this test's database closed to connections, every open one cut), then Redis away
 * (this file's redis-server stopped). Each request is answered within a bound (no request waits for the store to come
 * back), never with a 500: 503 `unavailable` when the operation needs the store that is away, its usual answer when it
 * does not. Once the store is back, the API answers as before.
 */
import test from 'ava';
import { type Sweep, sweepFixture } from '../helpers/apiSweep.js';
import { ownRedis, stopDatabase, type StoppableRedis } from '../helpers/outage.js';
import { useStack, waitFor } from '../helpers/stack.js';

let redis: StoppableRedis;
test.before(async () => {
  redis = await ownRedis();
});
const stack = useStack(test, () => ({
  // the throttles would answer 429 to much of the sweep; issuance waits are bounded by HUB_ISSUANCE_WAIT_MS
  env: { REDIS_URL: redis.url, HUB_AUTH_FAILURE_LIMIT: '0', HUB_UNAUTH_RATE_LIMIT: '0', HUB_ISSUANCE_WAIT_MS: '1500' },
}));
stack.onStop(async () => {
  await redis?.start();
});
test.after.always(async () => {
  await redis?.stop();
});

let sweep: Sweep;
test.before(async () => {
  sweep = await sweepFixture(stack);
});

/**
 * The store stays away for the whole sweep, so a request that waited for it would never be answered: the bound only
 * has to be far above what an answer takes on a busy machine (the agent binary's download is its whole file).
 */
const BOUND_MS = 15_000;

/** Sends every operation once; what was answered 500, unbounded or without `{error, message}`, and the statuses seen. */
async function sweepAll(): Promise<{ failures: string[]; statuses: Map<number, number> }> {
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  for (const op of sweep.ordered()) {
    const method = op.method.toUpperCase();
    const path = sweep.pathOf(op);
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([
      stack.call(method, path, { auth: sweep.authOf(op), body: op.body ? sweep.baseOf(op) : undefined, contract: false }),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), BOUND_MS);
      }),
    ]).finally(() => clearTimeout(timer));
    const what = `${method} ${path}`;
    if (!r) {
      failures.push(`${what}: no answer within ${BOUND_MS} ms`);
      continue;
    }
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    // /healthz answers its own shape: {status, postgres, redis}
    if (path === '/healthz') {
      if (r.status !== 503 || r.json?.status !== 'unavailable') failures.push(`${what}: ${r.status} ${r.text.slice(0, 200)}`);
    } else if (r.status >= 500 && r.status !== 503) failures.push(`${what}: ${r.status} ${r.text.slice(0, 200)}`);
    else if (r.status === 503 && r.json?.error !== 'unavailable') failures.push(`${what}: 503 ${r.text.slice(0, 200)}`);
    else if (r.status >= 400 && (typeof r.json?.error !== 'string' || typeof r.json?.message !== 'string'))
      failures.push(`${what}: ${r.status} without {error, message}`);
    else if (Date.now() - started > BOUND_MS) failures.push(`${what}: took ${Date.now() - started} ms`);
  }
  return { failures, statuses };
}

test.serial('PostgreSQL away: every operation answers in time, 503 unavailable where it needs the database, never 500', async (t) => {
  const outage = await stopDatabase(stack.databaseUrl);
  let result: Awaited<ReturnType<typeof sweepAll>>;
  try {
    result = await sweepAll();
  } finally {
    await outage.end();
  }
  t.deepEqual(result.failures, []);
  t.true((result.statuses.get(503) ?? 0) > 50, `503 answers: ${JSON.stringify([...result.statuses])}`);
  // back: the hub's resources are all there
  const list = await waitFor(
    async () => {
      const r = await sweep.hub.call('GET', `${sweep.hub.h}/shares`);
      return r.status === 200 && r;
    },
    { what: 'the API answering again' },
  );
  t.true(list.json.totalElements >= 1);
});

test.serial('Redis away: every operation answers in time, never 500; what needs only PostgreSQL answers as usual', async (t) => {
  // the API is what is swept: the workers stop first, so that none is closing while its connections reconnect
  await stack.stopWorkers();
  await redis.stop();
  let result: Awaited<ReturnType<typeof sweepAll>>;
  try {
    await waitFor(async () => (await stack.call('GET', '/healthz')).status === 503, { what: '/healthz to see Redis away' });
    result = await sweepAll();
  } finally {
    await redis.start();
  }
  t.deepEqual(result.failures, []);
  const ok = [...result.statuses].filter(([status]) => status < 300).reduce((n, [, count]) => n + count, 0);
  t.true(ok > 40, `answered as usual: ${JSON.stringify([...result.statuses])}`);
  await waitFor(async () => (await stack.call('GET', '/healthz')).status === 200, { what: '/healthz 200 again' });
});
