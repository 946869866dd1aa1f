import type { MigrationContext } from '../migrate.js';

/**
 * Agent pools: what each edge last heard of a connected agent's pool state, on its agent_connections row (the API
 * shows it in `agents[]`): its weight and priority, whether it is draining, and the shares whose target it reports
 * down. And each share's `affinity`: 'none' (the default), 'client-ip' or 'cookie' (the last two for HTTP shares),
 * on the shares row the edges already read (a change reaches them through its trigger). And health checks tell the
 * edges when what an agent probes changes (an enabled check whose target is a share's target is that share's HTTP
 * check): not on every run, which writes only its last result.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE agent_connections
      ADD COLUMN weight integer NOT NULL DEFAULT 1,
      ADD COLUMN priority integer NOT NULL DEFAULT 0,
      ADD COLUMN draining boolean NOT NULL DEFAULT false,
      ADD COLUMN targets_down text[] NOT NULL DEFAULT '{}';
    ALTER TABLE shares ADD COLUMN affinity text NOT NULL DEFAULT 'none';
    ALTER TABLE shares ADD CONSTRAINT shares_affinity_known CHECK (affinity IN ('none', 'client-ip', 'cookie'));
    ALTER TABLE shares ADD CONSTRAINT shares_affinity_of_http CHECK (protocol = 'http' OR affinity = 'none');
    CREATE TRIGGER health_checks_notify_edge AFTER INSERT OR DELETE ON health_checks
      FOR EACH ROW EXECUTE FUNCTION edgehub_notify_edge();
    CREATE TRIGGER health_checks_change_notify_edge AFTER UPDATE ON health_checks
      FOR EACH ROW WHEN ((OLD.method, OLD.path, OLD.expected_status, OLD.target, OLD.timeout_ms, OLD.enabled)
                         IS DISTINCT FROM (NEW.method, NEW.path, NEW.expected_status, NEW.target, NEW.timeout_ms, NEW.enabled))
      EXECUTE FUNCTION edgehub_notify_edge();
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
