import type { MigrationContext } from '../migrate.js';

/**
 * The bucket tables drop their foreign keys to hubs as raw samples did (0401): a day's catch-up upserts about as
 * many minute buckets as samples, and the per-row check dominated it. Roll-ups write buckets only for hubs that
 * exist (they join hubs), and every query names a hub the caller was admitted to.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE usage_minutes DROP CONSTRAINT usage_minutes_hub_id_fkey;
    ALTER TABLE usage_hours DROP CONSTRAINT usage_hours_hub_id_fkey;
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
