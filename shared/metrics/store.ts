import { QueryTypes, type Transaction } from 'sequelize';
import { db } from '../db.js';

/** One validated usage sample, as stored. `timestamp` is the RFC 3339 text the client sent (PostgreSQL parses it exactly). */
export interface UsageRow {
  hubId: string;
  shareId: string | null;
  envZId: string | null;
  rx: number;
  tx: number;
  timestamp: string;
}

/**
 * Stores a batch in one statement: the columns travel as six arrays and `unnest` turns them back into rows, so the
 * statement has six parameters whatever the batch size (a VALUES list would need six per row). One statement is
 * atomic: the batch is stored whole or not at all.
 */
export async function insertSamples(rows: UsageRow[], transaction?: Transaction): Promise<void> {
  if (rows.length === 0) return;
  const hubIds: string[] = new Array(rows.length);
  const shareIds: (string | null)[] = new Array(rows.length);
  const envZIds: (string | null)[] = new Array(rows.length);
  const timestamps: string[] = new Array(rows.length);
  const rx: number[] = new Array(rows.length);
  const tx: number[] = new Array(rows.length);
  rows.forEach((row, i) => {
    hubIds[i] = row.hubId;
    shareIds[i] = row.shareId;
    envZIds[i] = row.envZId;
    timestamps[i] = row.timestamp;
    rx[i] = row.rx;
    tx[i] = row.tx;
  });
  await db().query(
    `INSERT INTO usage_samples (hub_id, share_id, env_z_id, ts, rx, tx)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::bigint[], $6::bigint[])`,
    { bind: [hubIds, shareIds, envZIds, timestamps, rx, tx], type: QueryTypes.INSERT, transaction },
  );
}
