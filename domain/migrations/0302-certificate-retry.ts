import type { MigrationContext } from '../migrate.js';

/** Certificate issuance failures of a custom frontend, so that retries back off (ACME CAs rate-limit failures). */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE custom_frontends
      ADD COLUMN certificate_failures integer NOT NULL DEFAULT 0,
      ADD COLUMN certificate_retry_at timestamptz;
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
