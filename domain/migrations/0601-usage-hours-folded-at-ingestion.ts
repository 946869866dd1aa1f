import type { MigrationContext } from '../migrate.js';

/**
 * Samples are folded into the hour buckets when they are stored (shared/metrics/store.ts: the COPY and the hourly
 * upserts in one transaction), so a sparkline never aggregates raw rows, not even right after a backfill.
 * `hours_folded` marks those rows: the roll-up adds them to the minute buckets only, and hourly queries read only the
 * raw rows that are not folded, which the partial index holds (it stays empty while every writer uses insertSamples).
 * The hour table leaves room on its pages so that adding to a bucket is a HOT update (no index entries).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE usage_samples ADD COLUMN hours_folded boolean NOT NULL DEFAULT false;
    CREATE INDEX usage_samples_hours_pending_idx ON usage_samples (xid, hub_id) WHERE NOT hours_folded;
    ALTER TABLE usage_hours SET (fillfactor = 70);
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
