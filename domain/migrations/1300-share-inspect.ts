import type { MigrationContext } from '../migrate.js';

/**
 * Request inspection: a share with `inspect` has its exchanges recorded by every edge (into Redis, not here). The
 * column rides the shares row the edge already reads, so turning it on or off reaches every edge through the
 * shares trigger that notifies them.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`ALTER TABLE shares ADD COLUMN inspect boolean NOT NULL DEFAULT false;`);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
