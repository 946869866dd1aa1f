import type { MigrationContext } from '../migrate.js';

/**
 * PKI: certificate authorities, JWT signing keys, certificate request tokens, client certificates, and the per-hub
 * name registry that makes a name unique among tokens AND certificates of a hub.
 *
 * pki_names holds one row per taken name. Its owner is a token or a certificate (exactly one), referenced by a
 * composite key (id, hub_id, name) with ON UPDATE/DELETE CASCADE: renaming or deleting the owner renames or frees the
 * name, and a rename or create that would collide fails on the primary key (hub_id, name) inside the same transaction.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE certificate_authorities (
      id text PRIMARY KEY,
      kind text NOT NULL CHECK (kind IN ('ROOT', 'ISSUING')),
      hub_id text REFERENCES hubs(id) ON DELETE CASCADE,
      subject text NOT NULL,
      certificate_pem text NOT NULL,
      private_key_sealed text NOT NULL,
      not_after timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((kind = 'ROOT') = (hub_id IS NULL))
    );
    CREATE UNIQUE INDEX certificate_authorities_one_root ON certificate_authorities ((kind)) WHERE kind = 'ROOT';
    CREATE UNIQUE INDEX certificate_authorities_one_per_hub ON certificate_authorities (hub_id) WHERE kind = 'ISSUING';

    CREATE TABLE signing_keys (
      kid text PRIMARY KEY,
      status text NOT NULL CHECK (status IN ('ACTIVE', 'RETIRED')),
      public_jwk jsonb NOT NULL CHECK (NOT public_jwk ? 'd'),
      private_key_sealed text NOT NULL,
      latest_jwt_expiry timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      retired_at timestamptz,
      CHECK ((status = 'RETIRED') = (retired_at IS NOT NULL))
    );
    CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys ((status)) WHERE status = 'ACTIVE';

    CREATE TABLE certificate_request_tokens (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      token text NOT NULL UNIQUE,
      common_name text,
      organization text,
      organizational_unit text,
      valid_years integer NOT NULL DEFAULT 1 CHECK (valid_years BETWEEN 1 AND 10),
      expires_at timestamptz NOT NULL,
      spent_at timestamptz,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (id, hub_id, name)
    );
    CREATE INDEX certificate_request_tokens_hub_idx ON certificate_request_tokens (hub_id, created_at);

    CREATE TABLE client_certificates (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      source text NOT NULL CHECK (source IN ('UPLOAD', 'CSR', 'ENROLLMENT')),
      certificate_pem text NOT NULL,
      chain_pem text,
      fingerprint_sha256 text NOT NULL,
      subject text NOT NULL,
      serial_number text NOT NULL,
      not_before timestamptz NOT NULL,
      not_after timestamptz NOT NULL,
      certificate_request_token_id text REFERENCES certificate_request_tokens(id) ON DELETE SET NULL,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (id, hub_id, name)
    );
    CREATE UNIQUE INDEX client_certificates_hub_name_key ON client_certificates (hub_id, name);
    -- a token is redeemed at most once
    CREATE UNIQUE INDEX client_certificates_token_key ON client_certificates (certificate_request_token_id)
      WHERE certificate_request_token_id IS NOT NULL;
    CREATE INDEX client_certificates_hub_idx ON client_certificates (hub_id, created_at);

    CREATE TABLE pki_names (
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL,
      token_id text,
      certificate_id text,
      PRIMARY KEY (hub_id, name),
      CHECK (num_nonnulls(token_id, certificate_id) = 1),
      FOREIGN KEY (token_id, hub_id, name) REFERENCES certificate_request_tokens (id, hub_id, name)
        ON UPDATE CASCADE ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE,
      FOREIGN KEY (certificate_id, hub_id, name) REFERENCES client_certificates (id, hub_id, name)
        ON UPDATE CASCADE ON DELETE CASCADE DEFERRABLE INITIALLY IMMEDIATE
    );
    CREATE UNIQUE INDEX pki_names_token_key ON pki_names (token_id) WHERE token_id IS NOT NULL;
    CREATE UNIQUE INDEX pki_names_certificate_key ON pki_names (certificate_id) WHERE certificate_id IS NOT NULL;
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
