import type { MigrationContext } from '../migrate.js';

/**
 * Agents: programs inside an environment's private network that dial out to the edge.
 * - agent_enrollments: one-time enrollment JWTs (only the digest of the token string they carry is stored), spent in
 *   the same statement that stores the agent;
 * - agents: an agent is its certificate (issued by the hub's CA for a P-256 key the agent made); deleting the row
 *   revokes it (the edge closes its connections on the notification);
 * - agent_connections: which edge holds a connection of which agent, refreshed by the edge's heartbeat (the API reads
 *   `connected`, `connectedAt`, `lastSeenAt` and `edges` from it).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    CREATE TABLE agents (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      env_z_id text NOT NULL,
      certificate_pem text NOT NULL,
      fingerprint_sha256 text NOT NULL,
      serial_number text NOT NULL,
      not_before timestamptz NOT NULL,
      not_after timestamptz NOT NULL,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      FOREIGN KEY (hub_id, env_z_id) REFERENCES environments (hub_id, env_z_id) ON DELETE CASCADE
    );
    CREATE INDEX agents_env_idx ON agents (hub_id, env_z_id, created_at);
    CREATE UNIQUE INDEX agents_fingerprint_key ON agents (fingerprint_sha256);

    CREATE TABLE agent_enrollments (
      id text PRIMARY KEY,
      hub_id text NOT NULL REFERENCES hubs(id) ON DELETE CASCADE,
      env_z_id text NOT NULL,
      token_digest text NOT NULL UNIQUE,
      expires_at timestamptz NOT NULL,
      spent_at timestamptz,
      agent_id text REFERENCES agents(id) ON DELETE SET NULL,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      FOREIGN KEY (hub_id, env_z_id) REFERENCES environments (hub_id, env_z_id) ON DELETE CASCADE
    );

    CREATE TABLE agent_connections (
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      edge_id text NOT NULL,
      edge_address text NOT NULL,
      connected_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, edge_id)
    );

    CREATE TRIGGER agents_notify_edge AFTER INSERT OR UPDATE OR DELETE ON agents
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
  `);
}

export async function down({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`DROP TABLE agent_connections; DROP TABLE agent_enrollments; DROP TABLE agents;`);
}
