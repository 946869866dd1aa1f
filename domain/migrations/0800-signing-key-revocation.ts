import type { MigrationContext } from '../migrate.js';

/**
 * An operator can revoke a signing key at once (POST /admin/v1/signing-keys/{kid}:revoke): a REVOKED key leaves the
 * JWKS and verifies nothing, whatever JWTs it signed. The row stays as a record (with revoked_at). RETIRED and
 * REVOKED keys both carry retired_at (when they stopped signing).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE signing_keys DROP CONSTRAINT IF EXISTS signing_keys_status_check;
    ALTER TABLE signing_keys DROP CONSTRAINT IF EXISTS signing_keys_check;
    ALTER TABLE signing_keys ADD COLUMN revoked_at timestamptz;
    ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_status_check CHECK (status IN ('ACTIVE', 'RETIRED', 'REVOKED'));
    ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_retired_check CHECK ((status = 'ACTIVE') = (retired_at IS NULL));
    ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_revoked_check CHECK ((status = 'REVOKED') = (revoked_at IS NOT NULL));
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
