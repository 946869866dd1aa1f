import type { MigrationContext } from '../migrate.js';

/**
 * IPsec on strongSwan: the data plane (an edge process holding the IPsec host
 * lock, edge/ipsec/host.ts) reports here what it runs, and the worker's provider waits on it:
 * - ipsec_local_tunnels.loaded_at: charon holds the tunnel's connection (NULL: not loaded, or unloaded);
 *   sa_status / sa_status_message / sa_checked_at: the security association as charon reports it;
 * - ipsec_local_listeners.listening_at: the IPsec share's listener accepts connections (NULL: closed).
 * Changes the data plane must act on are notified on the edge's channel; its own reports are not.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE ipsec_local_tunnels
      ADD COLUMN loaded_at timestamptz,
      ADD COLUMN sa_status text,
      ADD COLUMN sa_status_message text,
      ADD COLUMN sa_checked_at timestamptz;
    ALTER TABLE ipsec_local_listeners ADD COLUMN listening_at timestamptz;

    CREATE TRIGGER ipsec_local_tunnels_notify_edge AFTER INSERT OR DELETE ON ipsec_local_tunnels
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER ipsec_local_tunnels_change_notify_edge AFTER UPDATE ON ipsec_local_tunnels
      FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.released_at IS DISTINCT FROM NEW.released_at OR OLD.vpn_connection_id IS DISTINCT FROM NEW.vpn_connection_id)
      EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER ipsec_local_listeners_notify_edge AFTER INSERT OR DELETE ON ipsec_local_listeners
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER ipsec_local_listeners_change_notify_edge AFTER UPDATE ON ipsec_local_listeners
      FOR EACH ROW WHEN (OLD.released_at IS DISTINCT FROM NEW.released_at OR OLD.ingress_port IS DISTINCT FROM NEW.ingress_port OR OLD.target IS DISTINCT FROM NEW.target OR OLD.updated_at IS DISTINCT FROM NEW.updated_at)
      EXECUTE FUNCTION edgehub_notify_edge();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
