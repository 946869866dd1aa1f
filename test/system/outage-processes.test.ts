/**
 * The worker, the clock and the edge as the Procfile runs them (each its own process) through an outage of
 * PostgreSQL, then of Redis (restarted empty, as a cache that lost its data). Through each outage every process stays
 * up: no library's stray rejection and no unanswered connection error ends it, and the edge keeps serving the routes
 * it has. Once the store is back, each resumes without a restart: scheduled health checks run again (after Redis
 * comes back empty the clock puts their schedulers back), the worker issues certificates, the edge follows a new
 * share and records inspected requests again, and a live stream of inspected requests opened before the outage
 * carries them again, and a replay goes through the edge.
 */
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { edgeRequest, publicFrontendId, startBackend, type Backend } from '../helpers/edge.js';
import { ownRedis, stopDatabase, type StoppableRedis } from '../helpers/outage.js';
import { makeCsr } from '../helpers/pki.js';
import { spawnScript, type Spawned } from '../helpers/processes.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

/** How long each store stays away: several clock ticks, health-check runs and edge flushes fall inside it. */
const OUTAGE_MS = 6000;

let redis: StoppableRedis;
let backend: Backend;
test.before(async () => {
  redis = await ownRedis();
  backend = await startBackend((req, res) => res.end(`seen ${req.url}`));
});
const stack = useStack(test, () => ({
  // the API runs in this process; the worker, the clock and the edge are spawned below
  workers: false,
  env: {
    REDIS_URL: redis.url,
    HUB_HEALTH_CHECK_MIN_INTERVAL_SECONDS: '1',
    HUB_HEALTH_CHECK_RECONCILE_CRON: '*/2 * * * * *',
    HUB_SWEEP_CRON: '*/2 * * * * *',
    HUB_ISSUANCE_WAIT_MS: '5000',
  },
}));

interface Running {
  name: string;
  spawned: Spawned;
}
const running: Running[] = [];
let edgePort: number;
let hub: HubFixture;

stack.onStop(async () => {
  await redis?.start();
  // a clean stop of each, as a supervisor's SIGTERM
  await Promise.all(
    running.map(async ({ spawned }) => {
      if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) return;
      const exited = new Promise((resolve) => spawned.child.once('exit', resolve));
      spawned.child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
      await spawned.kill();
    }),
  );
});
test.after.always(async () => {
  await backend?.close();
  await redis?.stop();
});

test.before(async () => {
  edgePort = await freePort();
  running.push(
    { name: 'worker', spawned: spawnScript('workers/index.ts', { HUB_PROCESS: 'worker' }) },
    { name: 'clock', spawned: spawnScript('workers/clock.ts', { HUB_PROCESS: 'clock' }) },
    { name: 'edge', spawned: spawnScript('edge/index.ts', { HUB_PROCESS: 'edge', HUB_EDGE_HTTP_PORT: String(edgePort), HUB_EDGE_HTTPS_PORT: '0' }) },
  );
  await running[0].spawned.waitForLine(/workers started/, 'the worker started');
  await running[1].spawned.waitForLine(/clock started/, 'the clock started');
  await waitFor(async () => (await edgeRequest(edgePort, 'probe.invalid').catch(() => ({ status: 0 }))).status === 404, { what: 'the edge listening' });
  hub = await stack.hub();
});

/** Every spawned process still running, and none logged a fatal error or an unhandled rejection. */
function assertAllUp(t: import('ava').ExecutionContext, when: string): void {
  for (const { name, spawned } of running) {
    const { exitCode, signalCode } = spawned.child;
    t.true(exitCode === null && signalCode === null, `${when}: the ${name} process ended (${exitCode ?? signalCode})\n${spawned.output().slice(-3000)}`);
    t.notRegex(spawned.output(), /"level":60|Unhandled|uncaught/i, `${when}: the ${name} process logged a fatal error`);
  }
}

/** For OUTAGE_MS, a request through the edge every 500 ms, each answered 200; then `end` (the store back). */
async function servingThrough(t: import('ava').ExecutionContext, host: string, store: string, end: () => Promise<void>): Promise<void> {
  try {
    const until = Date.now() + OUTAGE_MS;
    while (Date.now() < until) {
      const r = await edgeRequest(edgePort, host, { path: `/during-${store}-outage` });
      t.is(r.status, 200, `the edge serves its routes while ${store} is away`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await end();
  }
}

/** Where each process's output stands now. */
const logMark = () => new Map(running.map(({ name, spawned }) => [name, spawned.output().length]));
/** Lines of `name`'s output after `mark` that match `re`. */
const linesSince = (mark: Map<string, number>, name: string, re: RegExp) => {
  const spawned = running.find((r) => r.name === name)!.spawned;
  return spawned
    .output()
    .slice(mark.get(name))
    .split('\n')
    .filter((line) => re.test(line)).length;
};

async function share(name: string): Promise<{ zId: string; host: string }> {
  const created = await hub.call('POST', `${hub.h}/shares`, { body: { name, frontendIds: [await publicFrontendId(hub)], target: backend.url, inspect: true } });
  if (created.status !== 201) throw new Error(`share: ${created.status} ${created.text}`);
  const host = new URL(created.json.frontendEndpoint).hostname;
  await waitFor(async () => (await edgeRequest(edgePort, host)).status === 200, { what: `the edge routing ${name}` });
  return { zId: created.json.zId, host };
}

/** A scheduled run of the check that started after `since` and succeeded. */
async function scheduledRunAfter(checkId: string, since: number, what: string): Promise<void> {
  await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/executions?resourceId=${checkId}&type=health-checks.scheduledRun&status=SUCCEEDED`);
      return r.status === 200 && r.json.content.some((e: { createdAt: string }) => Date.parse(e.createdAt) > since);
    },
    { what, timeoutMs: 40_000, intervalMs: 250 },
  );
}

/** A certificate issued by the worker process through the queue. */
async function issue(name: string): Promise<void> {
  const r = await waitFor(
    async () => {
      const answer = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name, value: await makeCsr(`/CN=${name}`) } });
      // a 503 while the worker's connections come back is retried; the name is free again after a refused attempt
      return answer.status === 201 ? answer : answer.status === 503 ? undefined : Promise.reject(new Error(`${answer.status} ${answer.text}`));
    },
    { what: `certificate ${name} issued`, timeoutMs: 40_000, intervalMs: 500 },
  );
  const issued = await hub.call('GET', `${hub.h}/client-certificates/${r.json.id}`);
  if (!String(issued.json?.value).includes('BEGIN CERTIFICATE')) throw new Error(`no certificate in ${issued.text}`);
}

test.serial('the worker, the clock and the edge stay up through a PostgreSQL outage and then a Redis outage, and resume', async (t) => {
  const first = await share('before');
  const check = await hub.call('POST', `${hub.h}/health-checks`, {
    body: { name: 'through-outages', method: 'GET', path: '/probe', expectedStatus: 200, target: backend.url, intervalSeconds: 1 },
  });
  t.is(check.status, 201, check.text);
  await scheduledRunAfter(check.json.id, 0, 'a first scheduled run');
  await issue('before-outages');

  // PostgreSQL away: the edge serves from what it holds; jobs and ticks fail and are retried or settled later
  let mark = logMark();
  const pgOutage = await stopDatabase(stack.databaseUrl);
  await servingThrough(t, first.host, 'PostgreSQL', () => pgOutage.end());
  const pgBack = Date.now();
  assertAllUp(t, 'after the PostgreSQL outage');
  // the worker said that its jobs could not start, a few times, not once per job (a scheduled run each second)
  const notStarted = linesSince(mark, 'worker', /job not started/);
  t.true(notStarted >= 1 && notStarted <= 8, `worker lines about jobs not started during the PostgreSQL outage: ${notStarted}`);
  // the edge's change notifications retry every 2 s at most; the log says so once per error
  const relisten = linesSince(mark, 'edge', /could not listen for change notifications/);
  t.true(relisten >= 1 && relisten <= 3, `edge lines about listening again during the PostgreSQL outage: ${relisten}`);
  await scheduledRunAfter(check.json.id, pgBack, 'a scheduled run after PostgreSQL is back');
  await issue('after-postgres');
  await share('after-postgres');

  // a live stream of the first share, open through the Redis outage
  const live = await fetch(`${stack.baseUrl}${hub.h}/shares/${first.zId}/requests/live`, { headers: { authorization: hub.bearer } });
  t.is(live.status, 200);
  let streamed = '';
  const reader = live.body!.getReader();
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      streamed += Buffer.from(value!).toString();
    }
  })();
  await edgeRequest(edgePort, first.host, { path: '/live-before-redis-outage' });
  await waitFor(async () => streamed.includes('/live-before-redis-outage'), { what: 'the live stream carrying an exchange' });

  // Redis away (and back empty): the queues, the schedulers, the clock's tick locks and the inspection store are gone
  mark = logMark();
  await redis.stop();
  await servingThrough(t, first.host, 'Redis', () => redis.start());
  const redisBack = Date.now();
  assertAllUp(t, 'after the Redis outage');
  // each queue's worker retries its connection several times a second: the log says so a few times, not each time
  const workerErrors = linesSince(mark, 'worker', /worker error/);
  t.true(workerErrors >= 1 && workerErrors <= 8, `worker error lines during the Redis outage: ${workerErrors}`);
  // the edge dropped the inspected exchanges it could not record, and said so (not once per batch)
  const dropped = linesSince(mark, 'edge', /inspected exchanges not recorded/);
  t.true(dropped >= 1 && dropped <= 4, `edge lines about exchanges not recorded during the Redis outage: ${dropped}`);
  await scheduledRunAfter(check.json.id, redisBack, 'a scheduled run after Redis is back empty');
  await issue('after-redis');
  const last = await share('after-redis');
  // the stream opened before the outage carries exchanges again (its subscription is made again on reconnection)
  await waitFor(
    async () => {
      await edgeRequest(edgePort, first.host, { path: '/live-after-redis-outage' });
      return streamed.includes('/live-after-redis-outage');
    },
    { what: 'the open live stream carrying exchanges after Redis is back', timeoutMs: 15_000, intervalMs: 500 },
  );
  await reader.cancel();
  // inspection records again: a request after the outage is listed
  await edgeRequest(edgePort, last.host, { path: '/after-redis' });
  const recorded = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${last.zId}/requests`);
      return r.status === 200 && r.json.find((e: { path: string }) => e.path === '/after-redis');
    },
    { what: 'an inspected request after Redis is back', timeoutMs: 10_000 },
  );
  // and the edge takes replays again (its blocking read of the replay list was made again on reconnection)
  const replay = await hub.call('POST', `${hub.h}/shares/${last.zId}/requests/${recorded.id}/replay`);
  t.is(replay.status, 201, replay.text);
  t.is(replay.json.status, 200);
  assertAllUp(t, 'at the end');
});
