import type { MigrationContext } from '../migrate.js';

/**
 * A value sealed with the deployment's HUB_SECRET_KEY (shared/secretKeyProbe.ts): the first process to start writes
 * it, every process checks at start that it can open it, so a process with another key refuses to run instead of
 * failing every job that touches a secret.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE secret_key_probe (
      id integer PRIMARY KEY CHECK (id = 1),
      sealed text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
