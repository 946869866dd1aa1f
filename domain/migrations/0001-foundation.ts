import type { MigrationContext } from '../migrate.js';

export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE hubs (
      id text PRIMARY KEY,
      name text NOT NULL,
      features jsonb NOT NULL DEFAULT '{"ipsec": false}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      name text NOT NULL,
      username text NOT NULL UNIQUE,
      token_hash bytea NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    );
    CREATE INDEX api_keys_hub_idx ON api_keys (hub_id);

    CREATE TABLE environments (
      env_z_id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      description text NOT NULL DEFAULT '',
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX environments_hub_idx ON environments (hub_id, created_at);
    -- lets other tables reference (hub_id, env_z_id) so an environment of another hub can never be named
    CREATE UNIQUE INDEX environments_hub_env_key ON environments (hub_id, env_z_id);

    CREATE TABLE frontends (
      id text PRIMARY KEY,
      hub_id text REFERENCES hubs(id) ON DELETE CASCADE,
      custom_frontend_id text,
      public_name text NOT NULL,
      url_template text NOT NULL CHECK (position('{token}' in url_template) > 0),
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX frontends_standard_name_key ON frontends (public_name) WHERE hub_id IS NULL;
    CREATE INDEX frontends_hub_idx ON frontends (hub_id);

    CREATE TABLE executions (
      id text PRIMARY KEY,
      hub_id text REFERENCES hubs(id) ON DELETE CASCADE,
      process_id text NOT NULL UNIQUE,
      type text NOT NULL,
      resource_type text,
      resource_id text,
      status text NOT NULL CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED')),
      payload jsonb NOT NULL DEFAULT '{}',
      result jsonb,
      error text,
      attempts integer NOT NULL DEFAULT 0,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz
    );
    CREATE INDEX executions_hub_created_idx ON executions (hub_id, created_at DESC);
    CREATE INDEX executions_resource_idx ON executions (resource_type, resource_id);
    CREATE INDEX executions_pending_idx ON executions (created_at) WHERE status IN ('QUEUED', 'RUNNING');

    INSERT INTO frontends (id, public_name, url_template)
    VALUES (gen_random_uuid()::text, 'public', 'https://{token}.share.localhost');
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
