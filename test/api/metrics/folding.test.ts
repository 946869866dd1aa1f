/**
 * Samples are folded into the hour buckets in the transaction that stores them (shared/metrics/store.ts): sparklines
 * and hourly metrics are exact right after ingestion with no roll-up, the roll-up then adds them to the minute buckets
 * only, concurrent writers of the same buckets add up exactly, and a failed batch stores nothing at all.
 */
import test from 'ava';
import { QueryTypes } from 'sequelize';
import { db } from '../../../shared/db.js';
import { insertSamples, type UsageRow } from '../../../shared/metrics/store.js';
import { type Stack, useStack } from '../../helpers/stack.js';
import { assertSeries, environment, get, HOUR, MINUTE, pendingSamples, rollUpAll, sampleMaker, type Sample } from '../../helpers/usage.js';

const stack = useStack(test, { workers: false });

const ingest = async (samples: Sample[]) => {
  const r = await stack.call('POST', '/admin/v1/usage', { auth: stack.admin, body: { samples } });
  if (r.status !== 202) throw new Error(`ingest: ${r.status} ${r.text}`);
};
const { samplesOf } = sampleMaker(11);

/** Every (scope, id, bucket) of the tier equals the sum of the hub's raw samples, and nothing else is there. */
async function tierEqualsRaw(hubId: string, tier: 'usage_minutes' | 'usage_hours', bin: string) {
  return db().query(
    `WITH raw AS (
       SELECT 'hub' AS scope, hub_id AS scope_id, date_bin('${bin}', ts, TIMESTAMPTZ 'epoch') AS b, sum(rx) AS rx, sum(tx) AS tx FROM usage_samples WHERE hub_id = $1 GROUP BY 1, 2, 3
       UNION ALL SELECT 'share', share_id, date_bin('${bin}', ts, TIMESTAMPTZ 'epoch'), sum(rx), sum(tx) FROM usage_samples WHERE hub_id = $1 AND share_id IS NOT NULL GROUP BY 1, 2, 3
       UNION ALL SELECT 'environment', env_z_id, date_bin('${bin}', ts, TIMESTAMPTZ 'epoch'), sum(rx), sum(tx) FROM usage_samples WHERE hub_id = $1 AND env_z_id IS NOT NULL GROUP BY 1, 2, 3
     ), tier AS (SELECT scope, scope_id, bucket_start AS b, rx, tx FROM ${tier} WHERE hub_id = $1)
     SELECT * FROM raw FULL JOIN tier USING (scope, scope_id, b) WHERE raw.rx IS DISTINCT FROM tier.rx OR raw.tx IS DISTINCT FROM tier.tx`,
    { bind: [hubId], type: QueryTypes.SELECT },
  );
}

async function shareOf(hub: Awaited<ReturnType<Stack['hub']>>, envZId: string, name: string): Promise<string> {
  const frontendId = (await get(hub, `${hub.h}/frontends`))[0].id;
  const r = await hub.call('POST', `${hub.h}/shares`, { body: { name, frontendIds: [frontendId], target: 'http://10.0.0.5:8080', envZId } });
  if (r.status !== 201) throw new Error(`share: ${r.status} ${r.text}`);
  return r.json.zId;
}

test.serial('ingested samples are in the hour buckets at once: sparklines and metrics exact with no roll-up', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  const [a, b] = [await shareOf(hub, env, 'a'), await shareOf(hub, env, 'b')];
  const inA = samplesOf({ hubId: hub.hubId, shareId: a }, 200, 23 * 60);
  const inB = samplesOf({ hubId: hub.hubId, shareId: b }, 100, 23 * 60);
  const envOnly = samplesOf({ hubId: hub.hubId, envZId: env }, 50, 23 * 60);
  // one backfill of most of a day, in a few requests
  for (const batch of [inA.slice(0, 120), [...inA.slice(120), ...inB], envOnly]) await ingest(batch);
  t.deepEqual(await tierEqualsRaw(hub.hubId, 'usage_hours', '1 hour'), [], 'the hour buckets hold every sample already');
  const sparklines = await get(hub, `${hub.h}/sparklines?duration=P1D`);
  const byId = new Map(sparklines.sparklines.map((s: { id: string; samples: unknown[] }) => [s.id, s.samples]));
  assertSeries(t, byId.get(a) as never, inA, HOUR, 'share a, P1D hourly');
  assertSeries(t, byId.get(b) as never, inB, HOUR, 'share b, P1D hourly');
  assertSeries(t, (await get(hub, `${hub.h}/metrics?duration=P1D&step=PT1H`)).samples, [...inA, ...inB, ...envOnly], HOUR, 'hub P1D hourly');
  const recent = (await get(hub, `${hub.h}/environments/${env}/metrics?duration=PT3H&step=PT1M`)).samples;
  const since = Date.parse(recent[0].timestamp);
  assertSeries(
    t,
    recent,
    [...inA, ...inB, ...envOnly].filter((s) => Date.parse(s.timestamp) >= since),
    MINUTE,
    'environment PT3H by minute',
  );
  // the roll-up adds them to the minute buckets and leaves the hour buckets as they are
  const before = await db().query('SELECT * FROM usage_hours WHERE hub_id = $1 ORDER BY scope, scope_id, bucket_start', {
    bind: [hub.hubId],
    type: QueryTypes.SELECT,
  });
  await rollUpAll();
  t.is(await pendingSamples(), 0);
  t.deepEqual(
    await db().query('SELECT * FROM usage_hours WHERE hub_id = $1 ORDER BY scope, scope_id, bucket_start', { bind: [hub.hubId], type: QueryTypes.SELECT }),
    before,
  );
  t.deepEqual(await tierEqualsRaw(hub.hubId, 'usage_minutes', '1 minute'), []);
  assertSeries(t, (await get(hub, `${hub.h}/sparklines?duration=P1D`)).sparklines[0].samples, inA, HOUR, 'share a after the roll-up');
});

test.serial('concurrent batches into the same buckets add up exactly (no lost update, no deadlock error)', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  const share = await shareOf(hub, env, 's');
  // 12 batches at once, all over the same 10 minutes, in different orders: every batch touches every bucket
  const batches = Array.from({ length: 12 }, (_, i) => {
    const batch = [...samplesOf({ hubId: hub.hubId, shareId: share }, 150, 10), ...samplesOf({ hubId: hub.hubId, envZId: env }, 50, 10)];
    return i % 2 ? batch.reverse() : batch;
  });
  await Promise.all(batches.map((batch) => ingest(batch)));
  t.deepEqual(await tierEqualsRaw(hub.hubId, 'usage_hours', '1 hour'), []);
  assertSeries(
    t,
    (await get(hub, `${hub.h}/shares/${share}/metrics?duration=PT15M&step=PT1M`)).samples,
    batches.flat().filter((s) => s.shareId),
    MINUTE,
    'share PT15M',
  );
});

test.serial('insertSamples is all or nothing: a batch whose bucket update fails leaves no raw row and no bucket change', async (t) => {
  const hub = await stack.hub();
  const hour = new Date(Math.floor(Date.now() / HOUR) * HOUR - 5 * HOUR);
  // a bucket one sample away from overflowing bigint: the upsert of the next batch fails after its COPY succeeded
  await db().query(`INSERT INTO usage_hours (hub_id, scope, scope_id, bucket_start, rx, tx) VALUES ($1, 'hub', $1, $2, 9223372036854775000, 0)`, {
    bind: [hub.hubId, hour.toISOString()],
  });
  const snapshot = () =>
    db().query(
      `SELECT (SELECT count(*)::int FROM usage_samples WHERE hub_id = $1) AS raw, (SELECT count(*)::int FROM usage_hours WHERE hub_id = $1) AS hours,
              (SELECT sum(rx)::text FROM usage_hours WHERE hub_id = $1) AS hours_rx`,
      { bind: [hub.hubId], type: QueryTypes.SELECT },
    );
  const before = await snapshot();
  const rows: UsageRow[] = [
    { hubId: hub.hubId, shareId: null, envZId: null, rx: 10, tx: 1, timestamp: new Date(hour.getTime() - 2 * HOUR).toISOString() },
    { hubId: hub.hubId, shareId: null, envZId: null, rx: 1_000_000, tx: 1, timestamp: new Date(hour.getTime() + 1234).toISOString() },
  ];
  await t.throwsAsync(insertSamples(rows), { message: /out of range/ });
  t.deepEqual(await snapshot(), before);
  // the same path stores a good batch whole, timestamps beyond microseconds cut to the microsecond
  await insertSamples([{ hubId: hub.hubId, shareId: null, envZId: null, rx: 7, tx: 3, timestamp: '2026-01-31T12:59:59.99999999+00:00' }]);
  const [stored] = await db().query<{ ts: string; hour: string }>(
    `SELECT to_char(ts AT TIME ZONE 'UTC', 'HH24:MI:SS.US') AS ts, (SELECT to_char(bucket_start AT TIME ZONE 'UTC', 'HH24:MI') FROM usage_hours WHERE hub_id = $1 AND rx = 7) AS hour
     FROM usage_samples WHERE hub_id = $1`,
    { bind: [hub.hubId], type: QueryTypes.SELECT },
  );
  t.deepEqual(stored, { ts: '12:59:59.999999', hour: '12:00' });
});
