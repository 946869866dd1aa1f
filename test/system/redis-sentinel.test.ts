import { once } from 'node:events';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { enqueue } from '../../domain/jobs/enqueue.js';
import { freePort } from '../../scripts/services/index.js';
import { type RedisWithSentinels, startRedisWithSentinels } from '../../scripts/services/sentinel.js';
import { defineProcessor, NO_PAYLOAD } from '../../workers/processor.js';
import { processors } from '../../workers/processors/index.js';
import { reconcileExecutions } from '../../workers/reconcile.js';
import { spawnScript } from '../helpers/processes.js';
import { useStack, waitFor } from '../helpers/stack.js';

/**
 * Redis through Sentinel (REDIS_SENTINELS): a real master, replica and three sentinels. Every connection of the
 * service (queues, workers with their blocking connections, the shared one) follows the master the sentinels name;
 * when the master is SIGKILLed and a sentinel promotes the replica, the same workers go on taking jobs (they do not
 * stall on the dead master) and every execution ends in a terminal state.
 */

let ha: RedisWithSentinels;
test.before(async () => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'sentinel-'));
  chmodSync(dir, 0o755);
  ha = await startRedisWithSentinels(dir);
});
const stack = useStack(test, () => ({ workers: false, env: { REDIS_SENTINELS: ha.sentinelList, REDIS_SENTINEL_NAME: ha.name, REDIS_URL: '' } }));
test.after.always(async () => {
  await ha?.stop();
});

const ran: string[] = [];
const quick = defineProcessor({
  type: 'system.sentinelTestJob',
  payload: NO_PAYLOAD,
  async handle(ctx) {
    ran.push(ctx.execution.id);
    return { ok: true };
  },
});

const unfinished = async () =>
  (await stack.sql.query(`SELECT count(*)::int AS n FROM executions WHERE type = 'system.sentinelTestJob' AND status NOT IN ('SUCCEEDED', 'FAILED')`)).rows[0]
    .n as number;

async function enqueueSome(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await enqueue({ hubId: null, type: 'system.sentinelTestJob', createdBy: 'test' })).id);
  return ids;
}

test.serial('a failover asked of the sentinels (the old master lives on as a replica): no connection stays on it, the workers go on', async (t) => {
  await stack.startWorkers([quick]);
  const before = await enqueueSome(3);
  await waitFor(async () => before.every((id) => ran.includes(id)), { what: 'the jobs before the failover' });
  // the workers wait for jobs in a blocking command on the master; it is demoted under them, alive
  const { demoted, promoted } = await ha.failover();
  t.log(`master ${demoted} demoted, ${promoted} promoted`);
  const after = await waitFor(async () => enqueueSome(5).catch(() => undefined), { timeoutMs: 30_000, what: 'jobs added on the new master' });
  await waitFor(
    async () => {
      await reconcileExecutions([...processors, quick], 0);
      return after.every((id) => ran.includes(id));
    },
    { timeoutMs: 30_000, intervalMs: 500, what: 'the same workers running jobs on the new master' },
  );
  await reconcileExecutions([...processors, quick]);
  await waitFor(async () => (await unfinished()) === 0, { timeoutMs: 30_000, what: 'every execution finished' });
  t.is(new Set(ran).size, ran.length, 'no job ran twice');
  await stack.stopWorkers();
});

test.serial('the master SIGKILLed: the sentinels promote the replica, the same workers go on, no execution is left unfinished', async (t) => {
  await stack.startWorkers([quick]);
  const before = await enqueueSome(5);
  await waitFor(async () => before.every((id) => ran.includes(id)), { what: 'the jobs before the failover' });
  t.is((await stack.call('GET', '/healthz')).status, 200);
  const hub = await stack.hub();
  t.is((await hub.call('POST', `${hub.h}/environments`, { body: { description: 'before' } })).status, 201);

  const failover = await ha.killMaster();
  t.log(`sentinels promoted port ${failover.promoted} ${failover.seconds.toFixed(1)} s after the master (port ${failover.killed}) was killed`);

  // the API and the queues reach the new master
  await waitFor(async () => (await stack.call('GET', '/healthz')).status === 200, { timeoutMs: 30_000, what: '/healthz 200 on the new master' });
  const after = await waitFor(async () => enqueueSome(5).catch(() => undefined), { timeoutMs: 30_000, what: 'jobs added on the new master' });
  // the workers that were blocked on the dead master take the new jobs: no stall after a failover (a job whose adding
  // met a connection still reconnecting is added by the sweep, as the clock does every minute)
  await waitFor(
    async () => {
      await reconcileExecutions([...processors, quick], 0);
      return after.every((id) => ran.includes(id));
    },
    { timeoutMs: 30_000, intervalMs: 500, what: 'the same workers running jobs after the failover' },
  );

  // a job that Redis lost in the failover (replication is asynchronous) is added again from its execution row
  await reconcileExecutions([...processors, quick]);
  await waitFor(async () => (await unfinished()) === 0, { timeoutMs: 30_000, what: 'every execution finished' });
  t.is(await unfinished(), 0);
  t.is(new Set(ran).size, ran.length, 'no job ran twice');
  await stack.stopWorkers();
});

test.serial('sentinels that answer but name a master nobody reaches: a process waits for one, saying so now and then, without crashing', async (t) => {
  // the last data node goes: the sentinels still answer, naming a master that is away, with no replica to promote
  for (const node of ha.nodes) node.process.kill('SIGKILL');
  const worker = spawnScript('workers/index.ts', {
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: '',
    REDIS_SENTINELS: ha.sentinelList,
    REDIS_SENTINEL_NAME: ha.name,
    HUB_METRICS_PORT: '0',
  });
  try {
    await new Promise((r) => setTimeout(r, 10_000));
    t.is(worker.child.exitCode, null, `the process is still running\n${worker.output().slice(-2000)}`);
    const errorLines = worker
      .output()
      .split('\n')
      .filter((l) => /ECONNREFUSED|unreachable|no sentinel answers/.test(l));
    // one line per queue and reason each 5 s at most, not a line per reconnection attempt (every 50-2000 ms per connection)
    t.true(errorLines.length <= 3 * 7 * 2, `${errorLines.length} lines in 10 s:\n${errorLines.slice(0, 5).join('\n')}`);
  } finally {
    await worker.kill();
  }
});

test.serial('a sentinel list where no sentinel answers: a process stops at start with one line naming the setting', async (t) => {
  const closed = await freePort();
  const worker = spawnScript('workers/index.ts', {
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: '',
    REDIS_SENTINELS: `127.0.0.1:${closed}`,
    HUB_METRICS_PORT: '0',
  });
  const [code] = (await once(worker.child, 'exit')) as [number | null];
  t.is(code, 2, worker.output().slice(-2000));
  t.regex(worker.output(), /REDIS_SENTINELS: no sentinel answers \(127\.0\.0\.1:\d+: .*\)/);
});
