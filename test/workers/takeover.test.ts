import test from 'ava';
import { readSettings } from '../../shared/settings.js';
import { enqueue } from '../../domain/jobs/enqueue.js';
import { queue } from '../../domain/jobs/queues.js';
import { takeoverSettings } from '../../workers/runner.js';
import { defineProcessor, NO_PAYLOAD } from '../../workers/processor.js';
import { spawnScript, type Spawned } from '../helpers/processes.js';
import { useStack, waitFor } from '../helpers/stack.js';

/**
 * Takeover of a dead worker's jobs with the default lock and stalled-check settings: worker A is SIGKILLed in the
 * middle of a job while worker B is running; B starts the job again within lockDuration + stalledInterval. The
 * figure is reported (t.log); only a generous bound is asserted (the machine is shared and noisy).
 */

// the in-process workers of the lock-renewal test hold a 2 s lock checked every second (the spawned ones keep the defaults)
const stack = useStack(test, { workers: false, env: { HUB_JOB_LOCK_MS: '2000', HUB_STALLED_INTERVAL_MS: '1000' } });
stack.onStop(async () => {
  for (const s of spawned) await s.kill();
});
const spawned: Spawned[] = [];

function worker(provisionDelayMs: number): Spawned {
  // the defaults: no HUB_JOB_LOCK_MS / HUB_STALLED_INTERVAL_MS
  const w = spawnScript('workers/index.ts', { HUB_PROVISION_DELAY_MS: String(provisionDelayMs), HUB_JOB_LOCK_MS: '', HUB_STALLED_INTERVAL_MS: '' });
  spawned.push(w);
  return w;
}

test.serial('the defaults take over within lock + stalled interval (about 15 s at most)', (t) => {
  const defaults = readSettings({ HUB_JOB_LOCK_MS: '', HUB_STALLED_INTERVAL_MS: '' });
  t.is(defaults.HUB_JOB_LOCK_MS, 8_000);
  t.is(defaults.HUB_STALLED_INTERVAL_MS, 4_000);
  t.true(defaults.HUB_JOB_LOCK_MS + defaults.HUB_STALLED_INTERVAL_MS <= 15_000);
  const set = readSettings({ HUB_JOB_LOCK_MS: '2000', HUB_STALLED_INTERVAL_MS: '1000' });
  t.deepEqual([set.HUB_JOB_LOCK_MS, set.HUB_STALLED_INTERVAL_MS], [2000, 1000]);
});

test.serial("a SIGKILLed worker's job is taken over by another worker, and finishes exactly once", async (t) => {
  const hub = await stack.hub({ ipsec: true });
  // A is slow (30 s per provisioning step), so that it is still in the middle of the job when B is up
  const a = worker(30_000);
  await a.waitForLine(/workers started/, 'worker A');
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: { name: 'takeover', peerPublicIp: '203.0.113.91', peerCidr: '10.91.0.0/16' } });
  t.is(created.status, 202);
  const tunnelId: string = created.json.id;
  const executionId = created.headers.get('location')!.split('/').pop()!;
  await waitFor(async () => (await stack.sql.query('SELECT status FROM executions WHERE id = $1', [executionId])).rows[0].status === 'RUNNING', {
    timeoutMs: 60_000,
    what: 'worker A to run the job',
  });
  const b = worker(200);
  await b.waitForLine(/workers started/, 'worker B');
  // A holds the job: BullMQ has started it once (a stall does not count as a failed attempt, attemptsStarted does)
  const started = async () => (await queue('ipsec').getJob(executionId))?.attemptsStarted ?? 0;
  t.is(await started(), 1);
  t.is(await (await queue('ipsec').getJob(executionId))!.getState(), 'active');

  const killedAt = Date.now();
  await a.kill();
  const attempt2 = await waitFor(async () => ((await started()) >= 2 ? Date.now() : undefined), {
    timeoutMs: 90_000,
    intervalMs: 100,
    what: 'worker B to take the job over',
  }).catch(async (err) => {
    const job = await queue('ipsec').getJob(executionId);
    t.log(
      JSON.stringify({
        state: await job?.getState(),
        ats: job?.attemptsStarted,
        stc: job?.stalledCounter,
        made: job?.attemptsMade,
        tunnel: (await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnelId}`)).json.status,
      }),
    );
    t.log(b.output().slice(-3000));
    throw err;
  });
  const seconds = (attempt2 - killedAt) / 1000;
  const { HUB_JOB_LOCK_MS: lock, HUB_STALLED_INTERVAL_MS: interval } = readSettings({});
  t.log(
    `takeover: worker B started the dead worker's job ${seconds.toFixed(1)} s after the SIGKILL (bound by lock ${lock / 1000} s + stalled check ${interval / 1000} s)`,
  );
  t.true(seconds < 60, `generous bound: ${seconds} s`);

  const tunnel = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnelId}`);
      return r.json.status === 'DEPLOYED' ? r.json : undefined;
    },
    { timeoutMs: 60_000, what: 'DEPLOYED' },
  );
  t.is(tunnel.id, tunnelId);
  const execution = await waitFor(async () => {
    const row = (await stack.sql.query('SELECT status, attempts FROM executions WHERE id = $1', [executionId])).rows[0];
    return row.status === 'SUCCEEDED' ? row : undefined;
  });
  t.is(execution.status, 'SUCCEEDED');
  t.is(await started(), 2, 'started by A, then once by B');
  t.is((await stack.sql.query('SELECT count(*)::int AS n FROM ipsec_local_tunnels WHERE tunnel_id = $1', [tunnelId])).rows[0].n, 1);
});

test.serial('lock renewal keeps a job that runs longer than the lock safe: it runs once', async (t) => {
  const runs: number[] = [];
  const long = defineProcessor({
    type: 'system.takeoverTestLongJob',
    payload: NO_PAYLOAD,
    async handle(ctx) {
      runs.push(ctx.attempt);
      await new Promise((r) => setTimeout(r, 2.2 * takeoverSettings().lockDuration)); // > 2 lock periods, > 4 stalled checks
      return { slept: true };
    },
  });
  await stack.startWorkers([long]);
  try {
    const execution = await enqueue({ hubId: null, type: 'system.takeoverTestLongJob', createdBy: 'test' });
    const done = await waitFor(
      async () => {
        const row = (await stack.sql.query('SELECT status, attempts FROM executions WHERE id = $1', [execution.id])).rows[0];
        return row.status === 'SUCCEEDED' || row.status === 'FAILED' ? row : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500, what: 'the long job' },
    );
    t.is(done.status, 'SUCCEEDED');
    t.is(done.attempts, 1, 'never taken over while its worker lives');
    t.deepEqual(runs, [1]);
  } finally {
    await stack.stopWorkers();
  }
});
