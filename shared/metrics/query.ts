import { QueryTypes } from 'sequelize';
import { db } from '../db.js';
import type { MetricsWindow } from './window.js';

export type SeriesScope = 'hub' | 'share' | 'environment';

export interface UsagePoint {
  rx: number;
  tx: number;
  timestamp: string;
}

/** Which raw-sample column identifies a series of each scope (the hub scope takes every sample of the hub). */
const RAW_FILTER: Record<SeriesScope, string> = {
  hub: '',
  share: 'AND share_id = ANY($3::text[])',
  environment: 'AND env_z_id = ANY($3::text[])',
};

/** Samples not yet rolled up (see rollup.ts); read in the same statement as the tier, so nothing is counted twice. */
const NOT_ROLLED_UP = 'xid >= (SELECT rolled_up_to FROM usage_rollup_state WHERE id = 1)';

const bucketIndex = (column: string, startParam: string, stepParam: string) =>
  `floor(extract(epoch FROM ${column} - ${startParam}::timestamptz) / ${stepParam})::int`;

/** Every bucket of the window, in order, zero where nothing was used. */
function fill(window: MetricsWindow, rows: Iterable<{ i: number; rx: string | number; tx: string | number }>): UsagePoint[] {
  const points: UsagePoint[] = new Array(window.points);
  for (let i = 0; i < window.points; i++) points[i] = { rx: 0, tx: 0, timestamp: new Date(window.startMs + i * window.stepMs).toISOString() };
  for (const row of rows) {
    const point = points[row.i];
    if (!point) continue;
    point.rx += Number(row.rx);
    point.tx += Number(row.tx);
  }
  return points;
}

/**
 * The series of `ids` (summed: one share, one environment, the IPsec shares of a tunnel) of `scope` in a hub over
 * the window: the window's tier for rolled-up samples plus raw samples above the roll-up watermark.
 */
export async function querySeries(hubId: string, scope: SeriesScope, ids: string[], window: MetricsWindow): Promise<UsagePoint[]> {
  if (ids.length === 0) return fill(window, []);
  const rows = await db().query<{ i: number; rx: string; tx: string }>(
    `SELECT ${bucketIndex('u.t', '$4', '$6')} AS i, sum(u.rx)::bigint AS rx, sum(u.tx)::bigint AS tx
     FROM (
       SELECT bucket_start AS t, rx, tx FROM ${window.tier}
       WHERE hub_id = $1 AND scope = $2 AND scope_id = ANY($3::text[]) AND bucket_start >= $4::timestamptz AND bucket_start < $5::timestamptz
       UNION ALL
       SELECT ts, rx, tx FROM usage_samples
       WHERE ${NOT_ROLLED_UP} AND hub_id = $1 ${RAW_FILTER[scope]} AND ts >= $4::timestamptz AND ts < $5::timestamptz
     ) u
     GROUP BY 1`,
    {
      bind: [hubId, scope, ids, new Date(window.startMs).toISOString(), new Date(window.endMs).toISOString(), window.stepMs / 1000],
      type: QueryTypes.SELECT,
    },
  );
  return fill(window, rows);
}

/** The series of every share of a hub over the window, keyed by share id, in one grouped query. */
export async function queryShareSeries(hubId: string, shareIds: string[], window: MetricsWindow): Promise<Map<string, UsagePoint[]>> {
  const rows = await db().query<{ id: string; i: number; rx: string; tx: string }>(
    `SELECT u.id, ${bucketIndex('u.t', '$2', '$4')} AS i, sum(u.rx)::bigint AS rx, sum(u.tx)::bigint AS tx
     FROM (
       SELECT scope_id AS id, bucket_start AS t, rx, tx FROM ${window.tier}
       WHERE hub_id = $1 AND scope = 'share' AND bucket_start >= $2::timestamptz AND bucket_start < $3::timestamptz
       UNION ALL
       SELECT share_id, ts, rx, tx FROM usage_samples
       WHERE ${NOT_ROLLED_UP} AND hub_id = $1 AND share_id IS NOT NULL AND ts >= $2::timestamptz AND ts < $3::timestamptz
     ) u
     GROUP BY 1, 2`,
    {
      bind: [hubId, new Date(window.startMs).toISOString(), new Date(window.endMs).toISOString(), window.stepMs / 1000],
      type: QueryTypes.SELECT,
    },
  );
  const byShare = new Map<string, { i: number; rx: string; tx: string }[]>(shareIds.map((id) => [id, []]));
  for (const row of rows) byShare.get(row.id)?.push(row);
  return new Map([...byShare].map(([id, shareRows]) => [id, fill(window, shareRows)]));
}
