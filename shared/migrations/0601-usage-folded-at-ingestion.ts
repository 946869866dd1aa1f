import type { MigrationContext } from '../migrate.js';

/**
 * Samples are folded into the minute and hour buckets when they are stored (shared/metrics/store.ts: the COPY and the
 * bucket upserts in one transaction), so a sparkline never aggregates raw rows, not even right after a backfill.
 * `folded` marks those rows; the roll-up and the queries' pending part only concern rows written another way
 * (before this migration, or by SQL straight into the table), which the partial index below finds. The full
 * (xid, hub_id) index goes: every stored row paid for it, and only unfolded rows are ever looked up by xid now.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE usage_samples ADD COLUMN folded boolean NOT NULL DEFAULT false;
    CREATE INDEX usage_samples_unfolded_xid_hub_idx ON usage_samples (xid, hub_id) WHERE NOT folded;
    DROP INDEX usage_samples_xid_hub_idx;
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
