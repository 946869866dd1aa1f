import type { MigrationContext } from '../migrate.js';

/**
 * Raw samples drop their foreign key to hubs: its per-row check cost about two thirds of the insert rate
 * (bench/ingest.ts). Ingestion checks every sample's hub before the insert, queries always name a hub, the roll-up
 * skips samples of a hub that no longer exists, and pruning removes them by age. The bucket tables keep theirs.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query('ALTER TABLE usage_samples DROP CONSTRAINT usage_samples_hub_id_fkey');
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
