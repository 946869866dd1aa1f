import type { MigrationContext } from '../migrate.js';

/**
 * Token strings are looked up by their SHA-256, not by the string itself: the unauthenticated token-in-path route
 * and enrollment find a token from what a caller sends, and an index walk over the secret would compare it byte by
 * byte. The digest is kept by a trigger, so no writer can forget it.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE certificate_request_tokens ADD COLUMN token_digest bytea;
    UPDATE certificate_request_tokens SET token_digest = sha256(convert_to(token, 'UTF8'));
    ALTER TABLE certificate_request_tokens ALTER COLUMN token_digest SET NOT NULL;
    CREATE UNIQUE INDEX certificate_request_tokens_digest_key ON certificate_request_tokens (token_digest);

    CREATE FUNCTION certificate_request_token_digest() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.token_digest := sha256(convert_to(NEW.token, 'UTF8'));
      RETURN NEW;
    END $$;
    CREATE TRIGGER certificate_request_tokens_digest BEFORE INSERT OR UPDATE OF token ON certificate_request_tokens
      FOR EACH ROW EXECUTE FUNCTION certificate_request_token_digest();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
