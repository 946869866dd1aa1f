import type { MigrationContext } from '../migrate.js';

/**
 * The name registry's owners are referenced by their primary keys alone.
 *
 * pki_names referenced its owner by (id, hub_id, name). PostgreSQL checks a foreign key with a query on the referenced
 * table (`WHERE id = $1 AND hub_id = $2 AND name = $3`) whose plan each connection caches. Made while the table was
 * empty, that plan can use any index that serves one of the columns, and the tie went to the (hub_id, created_at)
 * index, filtering id and name: every check then read all of the hub's tokens (or certificates), so creates slowed
 * as a hub grew until an ANALYZE replaced the plan. A key of `id` alone can only be served by an index on id, which
 * is unique: one row, whatever the table's size and whenever the plan was made.
 *
 * What the composite key also guaranteed, that a registry entry names its owner's hub and name, is kept by the
 * database with triggers: an entry is checked against its owner (read by primary key) when written, and renaming
 * an owner renames its entry (as ON UPDATE CASCADE did), where the registry's primary key still refuses a collision.
 * The unique (id, hub_id, name) keys existed only to be referenced and go.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE pki_names DROP CONSTRAINT pki_names_token_id_hub_id_name_fkey;
    ALTER TABLE pki_names DROP CONSTRAINT pki_names_certificate_id_hub_id_name_fkey;
    ALTER TABLE certificate_request_tokens DROP CONSTRAINT certificate_request_tokens_id_hub_id_name_key;
    ALTER TABLE client_certificates DROP CONSTRAINT client_certificates_id_hub_id_name_key;

    ALTER TABLE pki_names ADD CONSTRAINT pki_names_token_id_fkey FOREIGN KEY (token_id)
      REFERENCES certificate_request_tokens (id) ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE;
    ALTER TABLE pki_names ADD CONSTRAINT pki_names_certificate_id_fkey FOREIGN KEY (certificate_id)
      REFERENCES client_certificates (id) ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE;

    -- an entry names its owner's hub and name (checked when the statement ends, like the foreign keys)
    CREATE FUNCTION pki_names_agree_with_owner() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      owner_hub text;
      owner_name text;
    BEGIN
      IF NEW.token_id IS NOT NULL THEN
        SELECT hub_id, name INTO owner_hub, owner_name FROM certificate_request_tokens WHERE id = NEW.token_id;
      ELSE
        SELECT hub_id, name INTO owner_hub, owner_name FROM client_certificates WHERE id = NEW.certificate_id;
      END IF;
      -- no owner at all is the foreign key's refusal
      IF FOUND AND (owner_hub <> NEW.hub_id OR owner_name <> NEW.name) THEN
        RAISE foreign_key_violation USING
          MESSAGE = format('pki_names entry (%s, %s) does not match its owner''s hub and name', NEW.hub_id, NEW.name),
          CONSTRAINT = 'pki_names_agree_with_owner', TABLE = 'pki_names';
      END IF;
      RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER pki_names_agree_with_owner AFTER INSERT OR UPDATE ON pki_names
      DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW EXECUTE FUNCTION pki_names_agree_with_owner();

    -- renaming (or moving) an owner renames its entry
    CREATE FUNCTION pki_names_follow_owner() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_TABLE_NAME = 'certificate_request_tokens' THEN
        UPDATE pki_names SET hub_id = NEW.hub_id, name = NEW.name WHERE token_id = NEW.id;
      ELSE
        UPDATE pki_names SET hub_id = NEW.hub_id, name = NEW.name WHERE certificate_id = NEW.id;
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER pki_names_follow_token AFTER UPDATE OF hub_id, name ON certificate_request_tokens
      FOR EACH ROW WHEN (OLD.hub_id IS DISTINCT FROM NEW.hub_id OR OLD.name IS DISTINCT FROM NEW.name)
      EXECUTE FUNCTION pki_names_follow_owner();
    CREATE TRIGGER pki_names_follow_certificate AFTER UPDATE OF hub_id, name ON client_certificates
      FOR EACH ROW WHEN (OLD.hub_id IS DISTINCT FROM NEW.hub_id OR OLD.name IS DISTINCT FROM NEW.name)
      EXECUTE FUNCTION pki_names_follow_owner();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
