import { QueryTypes } from 'sequelize';
import type { MigrationContext } from '../migrate.js';
import { encryptSecret } from '../../shared/secrets.js';

/**
 * Certificate request token strings are encrypted at rest (AES-256-GCM with HUB_SECRET_KEY, like every other secret
 * here): a copy of the database no longer hands out redeemable tokens. Look-ups stay by the SHA-256 digest, which the
 * application now computes (the trigger that derived it from the clear column goes with that column).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  const s = q.sequelize;
  await s.query(`ALTER TABLE certificate_request_tokens ADD COLUMN token_sealed text`);
  const rows = await s.query<{ id: string; token: string }>(`SELECT id, token FROM certificate_request_tokens`, { type: QueryTypes.SELECT });
  // only existing rows need the key (a fresh database never reads it here)
  for (const row of rows) {
    await s.query(`UPDATE certificate_request_tokens SET token_sealed = :sealed WHERE id = :id`, {
      replacements: { id: row.id, sealed: encryptSecret(row.token) },
    });
  }
  await s.query(`
    ALTER TABLE certificate_request_tokens ALTER COLUMN token_sealed SET NOT NULL;
    DROP TRIGGER IF EXISTS certificate_request_tokens_digest ON certificate_request_tokens;
    DROP FUNCTION IF EXISTS certificate_request_token_digest();
    ALTER TABLE certificate_request_tokens DROP COLUMN token;
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
