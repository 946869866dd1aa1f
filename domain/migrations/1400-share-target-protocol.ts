import type { MigrationContext } from '../migrate.js';

/** The protocol a share speaks to its target: HTTP/1.1 (every share so far) or HTTP/2 (gRPC and other h2 services). */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE shares ADD COLUMN target_protocol text NOT NULL DEFAULT 'http1' CHECK (target_protocol IN ('http1', 'h2'));
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
