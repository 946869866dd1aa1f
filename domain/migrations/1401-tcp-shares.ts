import type { MigrationContext } from '../migrate.js';

/**
 * TCP shares: a share's protocol ('http', every share so far, or 'tcp'), and the edge port a TCP share holds while
 * it exists. The unique constraint is what makes two creates at the same instant take two ports.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    ALTER TABLE shares ADD COLUMN protocol text NOT NULL DEFAULT 'http' CHECK (protocol IN ('http', 'tcp'));
    ALTER TABLE shares ADD COLUMN tcp_port integer UNIQUE CHECK (tcp_port BETWEEN 1 AND 65535);
    ALTER TABLE shares ADD CONSTRAINT shares_tcp_port_of_tcp CHECK ((protocol = 'tcp') = (tcp_port IS NOT NULL));
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
