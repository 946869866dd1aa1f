/** Shared pieces of the metrics tests: usage samples, exact per-bucket expectations, roll-up until done. */
import type { ExecutionContext } from 'ava';
import { QueryTypes } from 'sequelize';
import { db } from '../../shared/db.js';
import { rollUp } from '../../workers/rollup.js';
import { waitFor, type HubFixture } from './stack.js';

export interface Sample {
  hubId: string;
  envZId?: string;
  shareId?: string;
  rx: number;
  tx: number;
  timestamp: string;
}

export interface Point {
  rx: number;
  tx: number;
  timestamp: string;
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;

/** A deterministic generator of samples (a seeded LCG), so a failing run can be replayed. */
export function sampleMaker(seed: number) {
  const random = (max: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % max;
  };
  /** `count` samples spread over the last `spanMinutes` minutes (several per minute), with random volumes. */
  const samplesOf = (base: Omit<Sample, 'rx' | 'tx' | 'timestamp'>, count: number, spanMinutes: number, now = Date.now()): Sample[] =>
    Array.from({ length: count }, () => ({
      ...base,
      rx: random(1_000_000),
      tx: random(50_000),
      timestamp: new Date(now - random(spanMinutes * MINUTE)).toISOString(),
    }));
  return { random, samplesOf };
}

/** Every bucket of `points` is `step` apart, and each holds exactly the sum of the samples whose time falls in it. */
export function assertSeries(t: ExecutionContext, points: Point[], samples: Sample[], stepMs: number, what: string) {
  t.true(points.length > 0, what);
  points.forEach((p, i) => {
    t.is(Date.parse(p.timestamp) % stepMs, 0, `${what}: bucket ${i} aligned to the step`);
    if (i > 0) t.is(Date.parse(p.timestamp) - Date.parse(points[i - 1].timestamp), stepMs, `${what}: bucket ${i} one step after the previous`);
  });
  const start = Date.parse(points[0].timestamp);
  const expected = points.map((p) => ({ rx: 0, tx: 0, timestamp: p.timestamp }));
  for (const s of samples) {
    const index = Math.floor((Date.parse(s.timestamp) - start) / stepMs);
    if (!expected[index]) return t.fail(`${what}: sample at ${s.timestamp} is outside the window ${points[0].timestamp} .. ${points.at(-1)!.timestamp}`);
    expected[index].rx += s.rx;
    expected[index].tx += s.tx;
  }
  t.deepEqual(points, expected, what);
  t.true(samples.length === 0 || points.some((p) => p.rx > 0), `${what}: not vacuous`);
}

/** Samples the roll-up has yet to take (above its watermark). */
export const pendingSamples = async () =>
  (
    await db().query<{ n: number }>('SELECT count(*)::int AS n FROM usage_samples WHERE xid >= (SELECT rolled_up_to FROM usage_rollup_state)', {
      type: QueryTypes.SELECT,
    })
  )[0].n;

/**
 * Stores samples the way a writer other than insertSamples would (SQL straight into the table, or rows from before
 * migration 0601): raw rows only, not folded into the hour buckets, for the roll-up to take. One transaction per call.
 */
export async function insertUnfolded(samples: Sample[]): Promise<void> {
  await db().query(
    `INSERT INTO usage_samples (hub_id, share_id, env_z_id, ts, rx, tx)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int8[], $6::int8[])`,
    {
      bind: [
        samples.map((s) => s.hubId),
        samples.map((s) => s.shareId ?? null),
        samples.map((s) => s.envZId ?? null),
        samples.map((s) => s.timestamp),
        samples.map((s) => s.rx),
        samples.map((s) => s.tx),
      ],
    },
  );
}

/**
 * Rolls up until no sample is left above the watermark. One call can stop short of a sample: a transaction of
 * another test file's database that is still open holds the roll-up horizon back (transaction ids are cluster-wide).
 */
export async function rollUpAll(options?: Parameters<typeof rollUp>[0]) {
  const total = { batches: 0, samples: 0 };
  await waitFor(
    async () => {
      const r = await rollUp(options);
      total.batches += r.batches;
      total.samples += r.samples;
      return (await pendingSamples()) === 0;
    },
    { what: 'every sample rolled up' },
  );
  return total;
}

export async function get(hub: HubFixture, path: string) {
  const r = await hub.call('GET', path);
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
  return r.json;
}

export async function environment(hub: HubFixture): Promise<string> {
  const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'agent' } });
  if (r.status !== 201) throw new Error(`environment: ${r.status} ${r.text}`);
  return r.json.envZId;
}
