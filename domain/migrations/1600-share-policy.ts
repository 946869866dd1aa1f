import type { MigrationContext } from '../migrate.js';

/**
 * A share's traffic policy (`policy`, JSONB; NULL: none): IP rules, a rate limit, basic auth users (password hashes,
 * never the passwords), header rules, error pages and maintenance. It rides the shares row the edge already reads,
 * so a change reaches every edge through the shares trigger.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`ALTER TABLE shares ADD COLUMN policy jsonb;`);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
