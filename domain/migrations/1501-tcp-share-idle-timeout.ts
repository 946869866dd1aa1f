import type { MigrationContext } from '../migrate.js';

/**
 * A TCP share's own idle timeout (`tcpIdleTimeout`, an ISO 8601 duration; NULL: the edge's HUB_EDGE_TCP_IDLE_TIMEOUT).
 * It rides the shares row the edge already reads, so a change reaches every edge through the shares trigger. Only a
 * TCP share has one.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE shares ADD COLUMN tcp_idle_timeout text;
    ALTER TABLE shares ADD CONSTRAINT shares_tcp_idle_timeout_of_tcp CHECK (protocol = 'tcp' OR tcp_idle_timeout IS NULL);
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
