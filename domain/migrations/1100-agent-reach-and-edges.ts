import type { MigrationContext } from '../migrate.js';

/**
 * How an environment's targets are reached, and where the edges take agents.
 * - environments.reach: 'agent' (only through the environment's connected agents; with none connected the edge
 *   answers 502 and never connects itself) or 'edge' (the edge connects to the targets). An environment that has or
 *   had an agent (a spent enrollment stays behind a revoked agent) starts as 'agent'; the first agent enrollment sets
 *   it; only an explicit change sets it back. Edges reload their routes when it changes.
 * - edge_processes: each running edge's agent addresses (HUB_EDGE_AGENT_ADDRESSES) with a heartbeat and an expiry:
 *   the live set every edge hands its connected agents, so that an agent that knows one edge finds them all.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE environments ADD COLUMN reach text NOT NULL DEFAULT 'edge' CONSTRAINT environments_reach_check CHECK (reach IN ('agent', 'edge'));
    UPDATE environments e SET reach = 'agent'
     WHERE EXISTS (SELECT 1 FROM agents a WHERE a.hub_id = e.hub_id AND a.env_z_id = e.env_z_id)
        OR EXISTS (SELECT 1 FROM agent_enrollments x WHERE x.hub_id = e.hub_id AND x.env_z_id = e.env_z_id AND x.spent_at IS NOT NULL);
    CREATE TRIGGER environments_reach_notify_edge AFTER UPDATE OF reach ON environments
      FOR EACH ROW WHEN (OLD.reach IS DISTINCT FROM NEW.reach) EXECUTE FUNCTION edgehub_notify_edge();

    CREATE TABLE edge_processes (
      id text PRIMARY KEY,
      agent_addresses text[] NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX edge_processes_expires_idx ON edge_processes (expires_at);
    CREATE TRIGGER edge_processes_notify_edge AFTER INSERT OR DELETE ON edge_processes
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
