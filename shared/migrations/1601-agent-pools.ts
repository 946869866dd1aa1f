import type { MigrationContext } from '../migrate.js';

/**
 * Agent pools: what each edge last heard of a connected agent's pool state, on its agent_connections row (the API
 * shows it in `agents[]`): its weight and priority, whether it is draining, and the shares whose target it reports
 * down. And each share's `affinity`: 'none' (the default), 'client-ip' or 'cookie' (the last two for HTTP shares),
 * on the shares row the edges already read (a change reaches them through its trigger).
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
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
