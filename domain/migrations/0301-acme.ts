import type { MigrationContext } from '../migrate.js';

/** ACME issuance of custom frontend certificates: the account per directory and the DNS-01 TXT records served. */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE acme_accounts (
      directory_url text PRIMARY KEY,
      account_url text,
      private_key_sealed text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    -- TXT records of the validation zone (HUB_VALIDATION_DOMAIN), answered by the validation DNS responder
    CREATE TABLE acme_validation_records (
      name text NOT NULL CHECK (name = lower(name)),
      value text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (name, value)
    );
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
