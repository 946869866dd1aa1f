import test, { type ExecutionContext } from 'ava';
import { QueryTypes } from 'sequelize';
import { db } from '../../../shared/db.js';
import { enqueue } from '../../../domain/jobs/enqueue.js';
import { pruneUsage, rollUp } from '../../../workers/rollup.js';
import { Execution } from '../../../domain/models/Execution.js';
import { useStack, waitFor } from '../../helpers/stack.js';
import {
  assertSeries,
  environment,
  get,
  HOUR,
  insertUnfolded,
  MINUTE,
  pendingSamples,
  rollUpAll,
  sampleMaker,
  type Point,
  type Sample,
} from '../../helpers/usage.js';
import { assertRefused } from '../../helpers/refusals.js';

// Roll-up and pruning act on the whole database, so the tests of this file run one at a time.
const stack = useStack(test);

const ingest = async (samples: Sample[]) => {
  const r = await stack.call('POST', '/admin/v1/usage', { auth: stack.admin, body: { samples } });
  if (r.status !== 202) throw new Error(`ingest: ${r.status} ${r.text}`);
};

const { samplesOf } = sampleMaker(7);

test.serial('hub metrics are exact per bucket from raw samples, from the tiers, and from both at once', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  const other = await stack.hub();
  await ingest(samplesOf({ hubId: other.hubId }, 50, 50)); // another hub's usage must not show
  await insertUnfolded(samplesOf({ hubId: other.hubId }, 50, 50));
  // written straight into the table (not folded at ingestion): only the raw rows hold them until the roll-up
  const first = [...samplesOf({ hubId: hub.hubId }, 120, 50), ...samplesOf({ hubId: hub.hubId, envZId: env }, 80, 50)];
  await insertUnfolded(first);

  const check = async (samples: Sample[], stage: string) => {
    const series = await get(hub, `${hub.h}/metrics?duration=PT1H`);
    t.is(series.hubId, hub.hubId);
    t.is(series.scope, 'hub');
    t.is(series.id, hub.hubId);
    t.is(series.period, 'PT1H');
    t.is(series.samples.length, 60, 'PT1H in 1-minute buckets');
    t.true(
      Date.parse(series.samples.at(-1).timestamp) <= Date.now() && Date.now() < Date.parse(series.samples.at(-1).timestamp) + 2 * MINUTE,
      'the last bucket holds now',
    );
    assertSeries(t, series.samples, samples, MINUTE, `${stage}: PT1H/PT1M`);
    const day = await get(hub, `${hub.h2}/metrics?range=P1D`);
    t.is(day.samples.length, 144, 'P1D defaults to 10-minute buckets (at most 200 points)');
    assertSeries(t, day.samples, samples, 10 * MINUTE, `${stage}: P1D default step`);
    assertSeries(t, (await get(hub, `${hub.h}/metrics?duration=1d&step=PT1H`)).samples, samples, HOUR, `${stage}: P1D/PT1H from hour buckets`);
    assertSeries(t, (await get(hub, `${hub.h}/metrics?range=PT3H&step=PT7M`)).samples, samples, 7 * MINUTE, `${stage}: odd step`);
  };
  await check(first, 'raw only');
  const rolled = await rollUpAll();
  t.true(rolled.samples >= first.length);
  await check(first, 'rolled up');
  const second = samplesOf({ hubId: hub.hubId, envZId: env }, 150, 50);
  await ingest(second); // folded into the same buckets at ingestion
  await check([...first, ...second], 'tiers plus samples folded at ingestion in the same buckets');
  const third = samplesOf({ hubId: hub.hubId, envZId: env }, 60, 50);
  await insertUnfolded(third);
  await check([...first, ...second, ...third], 'tiers plus raw in the same buckets');
  await rollUpAll();
  await check([...first, ...second, ...third], 'rolled up twice');
});

test.serial('environment metrics hold only that environment, under every path form', async (t) => {
  const hub = await stack.hub();
  const [envA, envB] = [await environment(hub), await environment(hub)];
  const inA = samplesOf({ hubId: hub.hubId, envZId: envA }, 60, 40);
  await ingest([...inA, ...samplesOf({ hubId: hub.hubId, envZId: envB }, 60, 40), ...samplesOf({ hubId: hub.hubId }, 20, 40)]);
  await rollUpAll();
  const late = samplesOf({ hubId: hub.hubId, envZId: envA }, 30, 40);
  await insertUnfolded(late);
  for (const path of [
    `/hub/environments/${envA}/metrics?range=PT1H`,
    `/hub/environments/${envA}/metrics?duration=1h`,
    `${hub.h}/environments/${envA}/metrics?duration=PT1H`,
    `${hub.h2}/environments/${envA}/metrics`,
  ]) {
    const series = await get(hub, path);
    t.is(series.scope, 'environment', path);
    t.is(series.id, envA);
    t.is(series.envZId, envA);
    t.is(series.hubId, hub.hubId);
    t.is(series.period, 'PT1H');
    assertSeries(t, series.samples, [...inA, ...late], MINUTE, path);
  }
});

async function tierMatchesRaw(t: ExecutionContext, hubId: string) {
  const compare = async (tier: string, bin: string) => {
    const mismatches = await db().query(
      `WITH raw AS (
         SELECT 'hub' AS scope, hub_id AS scope_id, date_bin('${bin}', ts, TIMESTAMPTZ 'epoch') AS b, sum(rx) AS rx, sum(tx) AS tx FROM usage_samples WHERE hub_id = $1 GROUP BY 1, 2, 3
         UNION ALL SELECT 'environment', env_z_id, date_bin('${bin}', ts, TIMESTAMPTZ 'epoch'), sum(rx), sum(tx) FROM usage_samples WHERE hub_id = $1 AND env_z_id IS NOT NULL GROUP BY 1, 2, 3
       ), tier AS (SELECT scope, scope_id, bucket_start AS b, rx, tx FROM ${tier} WHERE hub_id = $1)
       SELECT * FROM raw FULL JOIN tier USING (scope, scope_id, b) WHERE raw.rx IS DISTINCT FROM tier.rx OR raw.tx IS DISTINCT FROM tier.tx`,
      { bind: [hubId], type: QueryTypes.SELECT },
    );
    t.deepEqual(mismatches, [], `${tier} equals the raw sums`);
  };
  await compare('usage_minutes', '1 minute');
  await compare('usage_hours', '1 hour');
}

const tierSnapshot = (hubId: string) =>
  db().query(
    `SELECT 'm' AS tier, scope, scope_id, bucket_start, rx, tx FROM usage_minutes WHERE hub_id = $1
     UNION ALL SELECT 'h', scope, scope_id, bucket_start, rx, tx FROM usage_hours WHERE hub_id = $1 ORDER BY 1, 2, 3, 4`,
    { bind: [hubId], type: QueryTypes.SELECT },
  );

test.serial('roll-up is idempotent: re-running, running at once, and retrying give the same sums', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  await insertUnfolded([...samplesOf({ hubId: hub.hubId, envZId: env }, 300, 180), ...samplesOf({ hubId: hub.hubId }, 100, 180)]);
  await Promise.all([rollUp(), rollUp(), rollUp()]);
  await rollUpAll();
  await tierMatchesRaw(t, hub.hubId);
  const before = await tierSnapshot(hub.hubId);
  t.true(before.length > 0);
  const again = await rollUp();
  t.is(again.samples, 0, 'nothing is rolled up twice');
  t.deepEqual(await tierSnapshot(hub.hubId), before);
});

test.serial('roll-up catches up in bounded batches, including late samples with old timestamps', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  await rollUpAll();
  const batches: Sample[] = [];
  for (let i = 0; i < 6; i++) {
    // separate requests while no roll-up runs: "downtime"; some samples are hours late
    const batch = [...samplesOf({ hubId: hub.hubId, envZId: env }, 40, 50), ...samplesOf({ hubId: hub.hubId }, 5, 20 * 60)];
    await insertUnfolded(batch);
    batches.push(...batch);
  }
  // a batch ends between transactions; a transaction larger than the batch size is taken whole
  const result = await rollUpAll({ batchSamples: 30 });
  t.true(result.batches >= 6, `took ${result.batches} batches`);
  t.is(result.samples, batches.length);
  await tierMatchesRaw(t, hub.hubId);
  assertSeries(t, (await get(hub, `${hub.h}/metrics?duration=P1D&step=PT1H`)).samples, batches, HOUR, 'P1D hourly after catch-up');
  assertSeries(t, (await get(hub, `${hub.h}/metrics?duration=P1D&step=PT30M`)).samples, batches, 30 * MINUTE, 'P1D half-hourly after catch-up');
});

test.serial('the clock job rolls up as an execution', async (t) => {
  const hub = await stack.hub();
  const samples = samplesOf({ hubId: hub.hubId }, 30, 30);
  await insertUnfolded(samples);
  const runJob = async () => {
    const execution = await enqueue({ type: 'metrics.rollUp', hubId: null, resourceType: 'metrics', createdBy: 'test' });
    return waitFor(
      async () => {
        const e = await Execution.findByPk(execution.id);
        return e && ['SUCCEEDED', 'FAILED'].includes(e.status) ? e : undefined;
      },
      { what: 'the roll-up execution' },
    );
  };
  let rolledByJobs = 0;
  await waitFor(
    async () => {
      const done = await runJob();
      t.is(done.status, 'SUCCEEDED', done.error ?? '');
      rolledByJobs += Number(done.result?.samples);
      return (await pendingSamples()) === 0;
    },
    { what: 'jobs rolled everything up' },
  );
  t.true(rolledByJobs >= samples.length, `jobs rolled up ${rolledByJobs} samples`);
  assertSeries(t, (await get(hub, `${hub.h}/metrics`)).samples, samples, MINUTE, 'default PT1H');
});

test.serial('pruning removes only rolled-up raw samples older than the retention; the hour tier keeps their sums', async (t) => {
  const hub = await stack.hub();
  const now = Date.now();
  const ancient = samplesOf({ hubId: hub.hubId }, 10, 60, now - 40 * 24 * HOUR);
  const old = samplesOf({ hubId: hub.hubId }, 30, 60, now - 3 * 24 * HOUR);
  const recent = samplesOf({ hubId: hub.hubId }, 40, 60, now - 2 * HOUR);
  await insertUnfolded([...ancient, ...old, ...recent]);
  // stored through the API: in the hour buckets from the start, but pruned only once rolled up like any other
  const folded = {
    ancient: samplesOf({ hubId: hub.hubId }, 5, 60, now - 40 * 24 * HOUR),
    old: samplesOf({ hubId: hub.hubId }, 7, 60, now - 3 * 24 * HOUR),
    recent: samplesOf({ hubId: hub.hubId }, 9, 60, now - 2 * HOUR),
  };
  await ingest([...folded.ancient, ...folded.old, ...folded.recent]);
  const rawCount = async () =>
    (await db().query<{ n: number }>('SELECT count(*)::int AS n FROM usage_samples WHERE hub_id = $1', { bind: [hub.hubId], type: QueryTypes.SELECT }))[0].n;
  await pruneUsage();
  t.is(await rawCount(), 80 + 21, 'samples not yet rolled up are never pruned');
  await rollUpAll();
  await pruneUsage();
  t.is(await rawCount(), 40 + 9, 'the rolled-up samples older than P2D are gone');
  const [{ minutes }] = await db().query<{ minutes: number }>(
    `SELECT count(*)::int AS minutes FROM usage_minutes WHERE hub_id = $1 AND bucket_start < now() - interval '35 days'`,
    { bind: [hub.hubId], type: QueryTypes.SELECT },
  );
  t.is(minutes, 0, 'minute buckets older than 35 days are gone');
  assertSeries(
    t,
    (await get(hub, `${hub.h}/metrics?duration=P7D&step=PT1H`)).samples,
    [...old, ...recent, ...folded.old, ...folded.recent],
    HOUR,
    'P7D hourly after pruning',
  );
  assertSeries(
    t,
    (await get(hub, `${hub.h}/metrics?duration=P60D&step=P1D`)).samples,
    [...ancient, ...old, ...recent, ...Object.values(folded).flat()],
    24 * HOUR,
    'P60D daily from hour buckets',
  );
});

test.serial('window parameters: bad values are 400 naming the parameter', async (t) => {
  const hub = await stack.hub();
  const cases: [string, RegExp][] = [
    ['duration=1x', /query parameter 'duration' must be an ISO 8601 duration/],
    ['duration=P1M', /'duration' must be an ISO 8601 duration/],
    ['duration=PT', /'duration'/],
    ['duration=PT0S', /'duration'/],
    ['range=yesterday', /query parameter 'range'/],
    ['duration=PT1H&range=PT1H', /one of the query parameters 'duration' or 'range', not both/],
    ['duration=PT1H&step=PT30S', /'step' must be a whole number of minutes/],
    ['duration=PT1H&step=soon', /query parameter 'step'/],
    ['duration=P30D&step=PT1M', /43200 points; at most 10000/],
    ['duration=P40D&step=PT10M', /need a step of whole hours/],
    ['duration=P500D&step=P1D', /at most P400D/],
  ];
  for (const [params, message] of cases) {
    const r = await hub.call('GET', `${hub.h}/metrics?${params}`);
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST');
    t.regex(r.json.message, message, `${params}: names the parameter or the limit (the point of this test)`);
  }
  const long = await get(hub, `${hub.h}/metrics?duration=P60D&step=PT1H`);
  t.is(long.samples.length, 1440);
  t.is(long.period, 'P60D');
  t.is((await get(hub, `${hub.h}/metrics?duration=PT15M`)).samples.length, 15);
  t.is((await get(hub, `${hub.h}/metrics?duration=P7D`)).samples.length, 168, 'P7D defaults to hourly');
});

test.serial("hub isolation: another hub is 403, another hub's environment is 404", async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const envA = await environment(a);
  await ingest(samplesOf({ hubId: a.hubId, envZId: envA }, 20, 30));
  for (const path of [`${a.h}/metrics`, `${a.h2}/metrics?duration=PT15M`, `${a.h}/environments/${envA}/metrics`, `${a.h}/sparklines`]) {
    const r = await b.call('GET', path);
    assertRefused(t, r, 403, 'not_found', 'EH_NOT_AUTHORIZED');
  }
  for (const path of [`/hub/environments/${envA}/metrics`, `${b.h}/environments/${envA}/metrics`]) {
    const r = await b.call('GET', path);
    assertRefused(t, r, 404, 'not_found', 'EH_NOT_FOUND', `'${envA}'`);
  }
  const bSeries = await get(b, `${b.h}/metrics`);
  t.true(
    bSeries.samples.every((p: Point) => p.rx === 0 && p.tx === 0),
    "b's metrics do not include a's samples",
  );
  const anonymous = await stack.call('GET', `/hub/environments/${envA}/metrics`);
  t.is(anonymous.status, 401);
  const operator = await stack.call('GET', `/hub/environments/${envA}/metrics`, { auth: stack.admin });
  t.is(operator.status, 403, 'the account form needs a hub key');
});
