import type { MigrationContext } from '../migrate.js';

/**
 * A hub's own quotas, set by the operator: `{"shares": n, "tcpPorts": n}`, each optional (absent: the service's
 * default, HUB_MAX_SHARES and HUB_MAX_TCP_PORTS). Share creation locks the hub's row and counts against them.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE hubs ADD COLUMN quotas jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(quotas) = 'object');
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
