import type { MigrationContext } from '../migrate.js';

/**
 * Usage samples and their roll-up tiers (see workers/rollup.ts for how they stay exact).
 *
 * usage_samples carries the id of the transaction that inserted it (`xid`). The roll-up consumes samples of finished
 * transactions in xid order and moves usage_rollup_state.rolled_up_to in the same transaction as it adds them to the
 * tiers, so a query that reads tiers + samples at or above the watermark in one statement counts every sample once.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE usage_samples (
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      share_id text,
      env_z_id text,
      ts timestamptz NOT NULL,
      rx bigint NOT NULL CHECK (rx >= 0),
      tx bigint NOT NULL CHECK (tx >= 0),
      xid xid8 NOT NULL DEFAULT pg_current_xact_id()
    );
    -- roll-up scans by xid; queries read the not yet rolled-up samples of one hub
    CREATE INDEX usage_samples_xid_hub_idx ON usage_samples (xid, hub_id);
    -- pruning by age; samples arrive roughly in time order, so a BRIN index stays small and useful
    CREATE INDEX usage_samples_ts_brin ON usage_samples USING brin (ts);

    CREATE TABLE usage_minutes (
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      scope text NOT NULL CHECK (scope IN ('hub', 'share', 'environment')),
      scope_id text NOT NULL,
      bucket_start timestamptz NOT NULL CHECK (extract(second FROM bucket_start) = 0),
      rx bigint NOT NULL CHECK (rx >= 0),
      tx bigint NOT NULL CHECK (tx >= 0),
      PRIMARY KEY (hub_id, scope, scope_id, bucket_start)
    );
    -- every series of a scope over a window at once (sparklines)
    CREATE INDEX usage_minutes_scope_time_idx ON usage_minutes (hub_id, scope, bucket_start);
    CREATE INDEX usage_minutes_time_brin ON usage_minutes USING brin (bucket_start);

    CREATE TABLE usage_hours (
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      scope text NOT NULL CHECK (scope IN ('hub', 'share', 'environment')),
      scope_id text NOT NULL,
      bucket_start timestamptz NOT NULL CHECK (extract(epoch FROM bucket_start)::bigint % 3600 = 0),
      rx bigint NOT NULL CHECK (rx >= 0),
      tx bigint NOT NULL CHECK (tx >= 0),
      PRIMARY KEY (hub_id, scope, scope_id, bucket_start)
    );
    CREATE INDEX usage_hours_scope_time_idx ON usage_hours (hub_id, scope, bucket_start);

    CREATE TABLE usage_rollup_state (
      id smallint PRIMARY KEY CHECK (id = 1),
      rolled_up_to xid8 NOT NULL,
      rolled_up_at timestamptz
    );
    INSERT INTO usage_rollup_state (id, rolled_up_to) VALUES (1, '0');
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
