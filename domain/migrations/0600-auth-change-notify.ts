import type { MigrationContext } from '../migrate.js';

/**
 * Web processes keep API keys and hubs in an in-process cache (api/middleware/authCache.ts). A trigger announces
 * every change to either on the channel `edgehub_auth` (payload `key:<sha256 hex>` or `hub:<id>`), so every process
 * drops the entry at once. NOTIFY is delivered on commit and only then, whoever made the change (the API, a script,
 * psql): no writer can forget it.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE FUNCTION notify_auth_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_TABLE_NAME = 'api_keys' THEN
        PERFORM pg_notify('edgehub_auth', 'key:' || encode(OLD.token_hash, 'hex'));
      ELSE
        PERFORM pg_notify('edgehub_auth', 'hub:' || OLD.id);
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER api_keys_notify_auth_change AFTER UPDATE OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION notify_auth_change();
    CREATE TRIGGER hubs_notify_auth_change AFTER UPDATE OR DELETE ON hubs
      FOR EACH ROW EXECUTE FUNCTION notify_auth_change();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
