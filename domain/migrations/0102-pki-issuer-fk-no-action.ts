import type { MigrationContext } from '../migrate.js';

/**
 * A hub's deletion cascades to both its certificates and its issuing CA; RESTRICT would refuse that depending on the
 * order the cascade visits them. NO ACTION checks at the end of the statement, when the certificates are gone too,
 * and still refuses deleting a CA alone while certificates name it.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE client_certificates DROP CONSTRAINT client_certificates_issuer_id_fkey;
    ALTER TABLE client_certificates ADD CONSTRAINT client_certificates_issuer_id_fkey
      FOREIGN KEY (issuer_id) REFERENCES certificate_authorities(id);
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
