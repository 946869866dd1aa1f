import type { MigrationContext } from '../migrate.js';

/** Auth providers, custom frontends (with their DNS/certificate state), shares and health checks. */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE auth_providers (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL,
      type text NOT NULL CHECK (type IN ('OIDC', 'GOOGLE', 'GITHUB')),
      client_id text NOT NULL,
      client_secret_sealed text NOT NULL,
      issuer_url text,
      scopes jsonb NOT NULL DEFAULT '[]',
      email_patterns jsonb NOT NULL DEFAULT '[]',
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (type <> 'OIDC' OR issuer_url IS NOT NULL)
    );
    CREATE UNIQUE INDEX auth_providers_hub_name_key ON auth_providers (hub_id, name);
    CREATE UNIQUE INDEX auth_providers_hub_id_key ON auth_providers (hub_id, id);

    CREATE TABLE custom_frontends (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      hostname text NOT NULL CHECK (hostname = lower(hostname)),
      domain_name text NOT NULL,
      frontend_id text NOT NULL UNIQUE,
      status text NOT NULL CHECK (status IN ('NEW', 'PENDING', 'ACTIVE')),
      ingress_addresses jsonb,
      validation_name text,
      validation_value text,
      dns_message text,
      certificate_pem text,
      certificate_key_sealed text,
      certificate_issuer text,
      certificate_expires_at timestamptz,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (status = 'NEW' OR (ingress_addresses IS NOT NULL AND validation_name IS NOT NULL AND validation_value IS NOT NULL)),
      CHECK (status <> 'ACTIVE' OR certificate_pem IS NOT NULL)
    );
    -- a hostname belongs to one custom frontend across all hubs
    CREATE UNIQUE INDEX custom_frontends_hostname_key ON custom_frontends (hostname);
    CREATE UNIQUE INDEX custom_frontends_hub_id_key ON custom_frontends (hub_id, id);

    -- the frontend row of a custom frontend goes with it
    CREATE UNIQUE INDEX frontends_custom_frontend_key ON frontends (custom_frontend_id);
    ALTER TABLE frontends ADD CONSTRAINT frontends_custom_frontend_fk
      FOREIGN KEY (custom_frontend_id) REFERENCES custom_frontends(id) ON DELETE CASCADE;
    ALTER TABLE frontends ADD CONSTRAINT frontends_custom_has_hub CHECK (custom_frontend_id IS NULL OR hub_id IS NOT NULL);
    ALTER TABLE custom_frontends ADD CONSTRAINT custom_frontends_frontend_fk
      FOREIGN KEY (frontend_id) REFERENCES frontends(id) DEFERRABLE INITIALLY DEFERRED;

    CREATE TABLE custom_frontend_auth_providers (
      hub_id text NOT NULL,
      custom_frontend_id text NOT NULL,
      auth_provider_id text NOT NULL,
      position integer NOT NULL,
      PRIMARY KEY (custom_frontend_id, auth_provider_id),
      FOREIGN KEY (hub_id, custom_frontend_id) REFERENCES custom_frontends(hub_id, id) ON DELETE CASCADE,
      -- an attached provider cannot be deleted; both must be of the same hub
      FOREIGN KEY (hub_id, auth_provider_id) REFERENCES auth_providers(hub_id, id) ON DELETE RESTRICT
    );
    CREATE INDEX custom_frontend_auth_providers_provider_idx ON custom_frontend_auth_providers (auth_provider_id);

    -- the local CA that signs custom frontend certificates when no ACME directory is configured
    CREATE TABLE frontend_issuers (
      name text PRIMARY KEY,
      certificate_pem text NOT NULL,
      private_key_sealed text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE shares (
      z_id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      env_z_id text,
      name text NOT NULL,
      frontend_id text NOT NULL,
      frontend_endpoint text NOT NULL,
      target text NOT NULL,
      auth_provider_id text,
      status text NOT NULL CHECK (status IN ('PROVISIONING', 'ACTIVE', 'ERROR')),
      share_mode text NOT NULL DEFAULT 'public',
      backend_mode text NOT NULL DEFAULT 'proxy',
      frontend_selection text NOT NULL DEFAULT 'public',
      reserved boolean NOT NULL DEFAULT false,
      "limited" boolean NOT NULL DEFAULT false,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      FOREIGN KEY (hub_id, env_z_id) REFERENCES environments(hub_id, env_z_id),
      FOREIGN KEY (hub_id, auth_provider_id) REFERENCES auth_providers(hub_id, id)
    );
    CREATE INDEX shares_hub_created_idx ON shares (hub_id, created_at);
    CREATE UNIQUE INDEX shares_hub_z_id_key ON shares (hub_id, z_id);

    CREATE TABLE share_frontends (
      share_z_id text NOT NULL REFERENCES shares(z_id) ON DELETE CASCADE,
      frontend_id text NOT NULL REFERENCES frontends(id) ON DELETE RESTRICT,
      position integer NOT NULL,
      PRIMARY KEY (share_z_id, frontend_id)
    );
    CREATE INDEX share_frontends_frontend_idx ON share_frontends (frontend_id);

    CREATE TABLE health_checks (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL,
      method text NOT NULL,
      path text NOT NULL CHECK (left(path, 1) = '/'),
      expected_status integer NOT NULL CHECK (expected_status BETWEEN 100 AND 599),
      target text CHECK (target ~ '^https?://'),
      timeout_ms integer NOT NULL DEFAULT 5000 CHECK (timeout_ms BETWEEN 1 AND 60000),
      interval_seconds integer NOT NULL DEFAULT 0 CHECK (interval_seconds BETWEEN 0 AND 86400),
      enabled boolean NOT NULL DEFAULT true,
      last_result text CHECK (last_result IN ('SUCCESS', 'FAILURE', 'TIMEOUT', 'ERROR')),
      last_status integer,
      last_latency_ms integer,
      last_message text,
      last_executed_at timestamptz,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (interval_seconds = 0 OR target IS NOT NULL)
    );
    CREATE INDEX health_checks_hub_created_idx ON health_checks (hub_id, created_at);
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
