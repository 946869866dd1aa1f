import type { MigrationContext } from '../migrate.js';

/**
 * Revocation that others can check: the record of every certificate a hub's CA issued that was revoked (deleted or
 * re-issued over), one signed CRL per CA, and one delegated OCSP responder per issuing CA.
 *
 * - certificate_revocations: one row per (CA, serial), written in the transaction that deletes or replaces the
 *   certificate; it names the certificate's id but has no foreign key to it, so it outlives the row. It goes with
 *   its CA (a deleted hub's CA takes its revocations along).
 * - certificate_revocation_lists: the CA's current CRL (DER), its number, its dates, and how many revocations it
 *   holds (the worker that wrote it compares that count afterwards to find revocations that came in meanwhile).
 * - ocsp_responders: the responder certificate the CA issued and its private key, sealed like the CA keys.
 *
 * A new revocation or responder is announced on the channel `edgehub_pki` (payload: the CA id), on commit, so every
 * web process drops the OCSP answers it signed for that CA.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE certificate_revocations (
      ca_id text NOT NULL REFERENCES certificate_authorities(id) ON DELETE CASCADE,
      serial_number text NOT NULL CHECK (serial_number ~ '^[0-9a-f]{1,128}$'),
      hub_id text REFERENCES hubs(id) ON DELETE CASCADE,
      certificate_id text,
      revoked_at timestamptz NOT NULL DEFAULT now(),
      reason_code smallint NOT NULL CHECK (reason_code IN (0, 1, 3, 4, 5)),
      revoked_by text NOT NULL,
      PRIMARY KEY (ca_id, serial_number)
    );

    CREATE TABLE certificate_revocation_lists (
      ca_id text PRIMARY KEY REFERENCES certificate_authorities(id) ON DELETE CASCADE,
      crl_number bigint NOT NULL CHECK (crl_number > 0),
      this_update timestamptz NOT NULL,
      next_update timestamptz NOT NULL,
      revoked_count integer NOT NULL,
      der bytea NOT NULL
    );

    CREATE TABLE ocsp_responders (
      ca_id text PRIMARY KEY REFERENCES certificate_authorities(id) ON DELETE CASCADE,
      certificate_pem text NOT NULL,
      private_key_sealed text NOT NULL,
      not_after timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE INDEX client_certificates_issuer_serial_idx ON client_certificates (issuer_id, serial_number) WHERE issuer_id IS NOT NULL;

    CREATE FUNCTION edgehub_notify_pki() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('edgehub_pki', OLD.ca_id);
      ELSE
        PERFORM pg_notify('edgehub_pki', NEW.ca_id);
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER certificate_revocations_notify_pki AFTER INSERT OR UPDATE OR DELETE ON certificate_revocations
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_pki();
    CREATE TRIGGER ocsp_responders_notify_pki AFTER INSERT OR UPDATE OR DELETE ON ocsp_responders
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_pki();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
