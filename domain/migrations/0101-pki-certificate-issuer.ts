import type { MigrationContext } from '../migrate.js';

/**
 * An issued certificate names its issuing CA instead of carrying a copy of the chain: the chain is read from the CA
 * rows, and each certificate row stays small enough to be stored inline (no TOAST work per enrollment).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE client_certificates
      ADD COLUMN issuer_id text REFERENCES certificate_authorities(id) ON DELETE RESTRICT,
      DROP COLUMN chain_pem;
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
