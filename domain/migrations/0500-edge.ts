import type { MigrationContext } from '../migrate.js';

/**
 * The edge (data plane): every share belongs to an environment (the hub's default one when create names none),
 * shares carry their access settings, standard frontends get certificates of their own, and every table the edge
 * routes from tells it about changes (NOTIFY on channel `edgehub_edge`, a JSON payload {table, op, hubId, id}).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE environments ADD COLUMN is_default boolean NOT NULL DEFAULT false;
    CREATE UNIQUE INDEX environments_one_default_per_hub ON environments (hub_id) WHERE is_default;

    -- a default environment for each hub that has shares without one, then every share in an environment
    INSERT INTO environments (env_z_id, hub_id, description, created_by, is_default)
    SELECT substr(md5(random()::text || hub_id), 1, 12), hub_id, 'default', 'system', true
      FROM (SELECT DISTINCT hub_id FROM shares WHERE env_z_id IS NULL) h;
    UPDATE shares s SET env_z_id = e.env_z_id FROM environments e
     WHERE s.env_z_id IS NULL AND e.hub_id = s.hub_id AND e.is_default;
    ALTER TABLE shares ALTER COLUMN env_z_id SET NOT NULL;

    ALTER TABLE shares
      ADD COLUMN mutual_tls boolean NOT NULL DEFAULT false,
      ADD COLUMN oauth_email_domains jsonb CHECK (oauth_email_domains IS NULL OR jsonb_typeof(oauth_email_domains) = 'array'),
      ADD COLUMN oauth_check_interval text;
    CREATE INDEX shares_active_idx ON shares (z_id) WHERE status = 'ACTIVE';

    -- the TLS certificate of a standard frontend's domain (the part of its URL template after "{token}.")
    CREATE TABLE edge_certificates (
      domain text PRIMARY KEY CHECK (domain = lower(domain)),
      certificate_pem text NOT NULL,
      private_key_sealed text NOT NULL,
      issuer text NOT NULL,
      not_after timestamptz NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE FUNCTION edgehub_notify_edge() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      row jsonb;
    BEGIN
      row := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
      PERFORM pg_notify('edgehub_edge', json_build_object(
        'table', TG_TABLE_NAME,
        'op', TG_OP,
        'hubId', row->>'hub_id',
        'id', COALESCE(row->>'z_id', row->>'share_z_id', row->>'id', row->>'domain')
      )::text);
      RETURN NULL;
    END $$;

    CREATE TRIGGER shares_notify_edge AFTER INSERT OR UPDATE OR DELETE ON shares
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER share_frontends_notify_edge AFTER INSERT OR UPDATE OR DELETE ON share_frontends
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER frontends_notify_edge AFTER INSERT OR UPDATE OR DELETE ON frontends
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    -- a PENDING frontend's DNS message changes often; only what the edge serves is worth a message
    CREATE TRIGGER custom_frontends_notify_edge AFTER UPDATE ON custom_frontends
      FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.certificate_pem IS DISTINCT FROM NEW.certificate_pem)
      EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER custom_frontends_delete_notify_edge AFTER DELETE ON custom_frontends
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER auth_providers_notify_edge AFTER INSERT OR UPDATE OR DELETE ON auth_providers
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER client_certificates_notify_edge AFTER INSERT OR UPDATE OR DELETE ON client_certificates
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER certificate_authorities_notify_edge AFTER INSERT OR UPDATE OR DELETE ON certificate_authorities
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER edge_certificates_notify_edge AFTER INSERT OR UPDATE OR DELETE ON edge_certificates
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
