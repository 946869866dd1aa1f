import type { MigrationContext } from '../migrate.js';

/**
 * A client certificate's change notification to the edge carries what the edge keeps of it (hub, name, fingerprint,
 * serial, issuer, validity), so that the edge admits a certificate just issued without reading it back: one query
 * fewer per enrollment, for the edge and for PostgreSQL. A deletion still names the row alone. The other tables keep
 * the generic notification (table, operation, hub, id); the payload is built from these columns only, not from the
 * whole row (its PEM).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE FUNCTION edgehub_notify_edge_certificate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('edgehub_edge', json_build_object('table', TG_TABLE_NAME, 'op', TG_OP, 'hubId', OLD.hub_id, 'id', OLD.id)::text);
      ELSE
        PERFORM pg_notify('edgehub_edge', json_build_object(
          'table', TG_TABLE_NAME, 'op', TG_OP, 'hubId', NEW.hub_id, 'id', NEW.id,
          'certificate', json_build_object(
            'id', NEW.id, 'hub_id', NEW.hub_id, 'name', NEW.name, 'fingerprint_sha256', NEW.fingerprint_sha256,
            'serial_number', NEW.serial_number, 'issuer_id', NEW.issuer_id, 'not_before', NEW.not_before, 'not_after', NEW.not_after)
        )::text);
      END IF;
      RETURN NULL;
    END $$;
    DROP TRIGGER client_certificates_notify_edge ON client_certificates;
    CREATE TRIGGER client_certificates_notify_edge AFTER INSERT OR UPDATE OR DELETE ON client_certificates
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge_certificate();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
