import { QueryTypes, type Transaction } from 'sequelize';
import { config } from '../shared/config.js';
import { db, withTransaction } from '../shared/db.js';
import { durationMs } from '../shared/durations.js';
import { MINUTE_TIER_RETENTION_MS } from '../shared/metrics/window.js';

/*
 * How the tiers stay exact.
 *
 * Every sample row records the transaction that inserted it (usage_samples.xid). A roll-up batch takes the samples
 * of transactions in [rolled_up_to, upTo), where upTo is at most the oldest transaction still running (the xmin of
 * its snapshot): every transaction below it has committed or aborted, so no sample can still appear in that range.
 * It adds their sums to the minute and hour buckets and moves rolled_up_to to upTo in the same transaction.
 *
 * So at any snapshot, tiers = the samples below rolled_up_to and the samples at or above it are not in any tier:
 * a query that reads both in one statement counts each sample exactly once, and a roll-up that runs twice, runs
 * concurrently or is retried after a crash adds nothing twice (the watermark row is locked and moves atomically).
 * Late samples (old timestamps) land in the next batch like any other. Raw samples are pruned only below the
 * watermark, so nothing is pruned before it is rolled up.
 *
 * The hour tier is also written at ingestion: insertSamples (shared/metrics/store.ts) adds a batch's hourly sums in
 * the transaction that stores it and marks its rows `hours_folded`. The roll-up adds those rows to the minute tier
 * only, and queries of the hour tier read only the raw rows that are not folded: a sparkline (hourly) never
 * aggregates raw samples, not even right after a backfill, while minute windows keep tiers + pending raw rows.
 */

interface RollupResult {
  batches: number;
  samples: number;
  minuteBuckets: number;
  hourBuckets: number;
  rolledUpTo: string;
}

const ROLL_UP_SQL = `
  WITH batch AS MATERIALIZED (
    SELECT s.hub_id, s.share_id, s.env_z_id, date_bin('1 minute', s.ts, TIMESTAMPTZ 'epoch') AS minute, s.hours_folded,
           sum(s.rx) AS rx, sum(s.tx) AS tx, count(*) AS n
    FROM usage_samples s
    JOIN hubs ON hubs.id = s.hub_id -- samples of a deleted hub are dropped, not rolled up
    WHERE s.xid >= $1::xid8 AND s.xid < $2::xid8
    GROUP BY 1, 2, 3, 4, 5
  ), deltas AS MATERIALIZED (
    SELECT hub_id, 'hub' AS scope, hub_id AS scope_id, minute, hours_folded, sum(rx) AS rx, sum(tx) AS tx FROM batch GROUP BY 1, 3, 4, 5
    UNION ALL
    SELECT hub_id, 'share', share_id, minute, hours_folded, sum(rx), sum(tx) FROM batch WHERE share_id IS NOT NULL GROUP BY 1, 3, 4, 5
    UNION ALL
    SELECT hub_id, 'environment', env_z_id, minute, hours_folded, sum(rx), sum(tx) FROM batch WHERE env_z_id IS NOT NULL GROUP BY 1, 3, 4, 5
  ), minutes AS (
    INSERT INTO usage_minutes AS m (hub_id, scope, scope_id, bucket_start, rx, tx)
    SELECT hub_id, scope, scope_id, minute, sum(rx), sum(tx) FROM deltas GROUP BY 1, 2, 3, 4
    ON CONFLICT (hub_id, scope, scope_id, bucket_start) DO UPDATE SET rx = m.rx + EXCLUDED.rx, tx = m.tx + EXCLUDED.tx
    RETURNING 1
  ), hours AS (
    -- samples stored through insertSamples are in the hour buckets already (shared/metrics/store.ts)
    INSERT INTO usage_hours AS h (hub_id, scope, scope_id, bucket_start, rx, tx)
    SELECT hub_id, scope, scope_id, date_bin('1 hour', minute, TIMESTAMPTZ 'epoch'), sum(rx), sum(tx) FROM deltas WHERE NOT hours_folded GROUP BY 1, 2, 3, 4
    ON CONFLICT (hub_id, scope, scope_id, bucket_start) DO UPDATE SET rx = h.rx + EXCLUDED.rx, tx = h.tx + EXCLUDED.tx
    RETURNING 1
  )
  SELECT (SELECT coalesce(sum(n), 0) FROM batch)::bigint AS samples,
         (SELECT count(*) FROM minutes)::bigint AS minute_buckets,
         (SELECT count(*) FROM hours)::bigint AS hour_buckets`;

async function one<T extends object>(sql: string, bind: unknown[], transaction: Transaction): Promise<T | undefined> {
  const [row] = await db().query<T>(sql, { bind, type: QueryTypes.SELECT, transaction });
  return row;
}

/**
 * The end (exclusive) of the next batch: whole transactions only, about `maxSamples` samples (more when a single
 * transaction holds more), never past `horizon`. Returns `horizon` when everything below it fits.
 */
async function batchEnd(from: string, horizon: string, maxSamples: number, t: Transaction): Promise<string> {
  const cut = await one<{ xid: string; first: string }>(
    `SELECT xid::text AS xid, (SELECT min(xid) FROM usage_samples WHERE xid >= $1::xid8 AND xid < $2::xid8)::text AS first
     FROM usage_samples WHERE xid >= $1::xid8 AND xid < $2::xid8 ORDER BY xid OFFSET $3 LIMIT 1`,
    [from, horizon, maxSamples],
    t,
  );
  if (!cut) return horizon;
  if (cut.xid !== cut.first) return cut.xid;
  // the first transaction alone holds more than maxSamples: take it whole
  const next = await one<{ xid: string | null }>(
    'SELECT min(xid)::text AS xid FROM usage_samples WHERE xid > $1::xid8 AND xid < $2::xid8',
    [cut.xid, horizon],
    t,
  );
  return next?.xid ?? horizon;
}

/** Rolls up one batch; returns undefined when there was nothing finished to roll up. */
async function rollUpBatch(maxSamples: number): Promise<(Omit<RollupResult, 'batches'> & { caughtUp: boolean }) | undefined> {
  return withTransaction(async (t) => {
    const state = await one<{ to: string }>('SELECT rolled_up_to::text AS to FROM usage_rollup_state WHERE id = 1 FOR UPDATE', [], t);
    if (!state) throw new Error('usage_rollup_state has no row: run the migrations');
    const { horizon } = (await one<{ horizon: string }>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon', [], t))!;
    if (BigInt(horizon) <= BigInt(state.to)) return undefined;
    const upTo = await batchEnd(state.to, horizon, maxSamples, t);
    // a catch-up batch groups hundreds of thousands of rows; let the aggregates stay in memory instead of spilling
    await db().query(`SET LOCAL work_mem = '128MB'`, { transaction: t });
    const counts = (await one<{ samples: string; minute_buckets: string; hour_buckets: string }>(ROLL_UP_SQL, [state.to, upTo], t))!;
    await db().query('UPDATE usage_rollup_state SET rolled_up_to = $1::xid8, rolled_up_at = now() WHERE id = 1', { bind: [upTo], transaction: t });
    return {
      samples: Number(counts.samples),
      minuteBuckets: Number(counts.minute_buckets),
      hourBuckets: Number(counts.hour_buckets),
      rolledUpTo: upTo,
      caughtUp: upTo === horizon,
    };
  });
}

/**
 * Rolls up every sample committed so far, in batches of about `batchSamples` (each batch its own transaction), so
 * after downtime it catches up in bounded steps. Stops after `maxBatches`; the next run continues.
 */
export async function rollUp({ batchSamples = 250_000, maxBatches = 200 } = {}): Promise<RollupResult> {
  const total: RollupResult = { batches: 0, samples: 0, minuteBuckets: 0, hourBuckets: 0, rolledUpTo: '' };
  while (total.batches < maxBatches) {
    const batch = await rollUpBatch(batchSamples);
    if (!batch) break;
    total.batches++;
    total.samples += batch.samples;
    total.minuteBuckets += batch.minuteBuckets;
    total.hourBuckets += batch.hourBuckets;
    total.rolledUpTo = batch.rolledUpTo;
    if (batch.caughtUp) break;
  }
  return total;
}

/** config().metricsRawRetention in milliseconds (an ISO 8601 duration such as P2D). */
function rawRetentionMs(): number {
  const text = config().metricsRawRetention;
  const ms = durationMs(text);
  if (ms === undefined || ms <= 0) throw new Error(`HUB_METRICS_RAW_RETENTION must be an ISO 8601 duration such as P2D (got '${text}')`);
  return ms;
}

/**
 * Deletes raw samples older than the raw retention that are already rolled up, and minute buckets older than their
 * retention (hour buckets are kept).
 */
export async function pruneUsage(now = Date.now()): Promise<{ samples: number; minuteBuckets: number }> {
  const rawCutoff = new Date(now - rawRetentionMs()).toISOString();
  const minuteCutoff = new Date(now - MINUTE_TIER_RETENTION_MS).toISOString();
  const [, samples] = await db().query(
    'DELETE FROM usage_samples WHERE ts < $1::timestamptz AND xid < (SELECT rolled_up_to FROM usage_rollup_state WHERE id = 1)',
    { bind: [rawCutoff] },
  );
  const [, minuteBuckets] = await db().query('DELETE FROM usage_minutes WHERE bucket_start < $1::timestamptz', { bind: [minuteCutoff] });
  return { samples: rowCount(samples), minuteBuckets: rowCount(minuteBuckets) };
}

const rowCount = (meta: unknown): number => (typeof meta === 'number' ? meta : Number((meta as { rowCount?: number })?.rowCount ?? 0));
