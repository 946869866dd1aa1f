import type { MigrationContext } from '../migrate.js';

/**
 * A TCP share's public address is tcp://HOST:PORT with PORT its own edge port, whatever its mutualTls: an earlier
 * update turned it into the https:// address of the HTTP TLS listener when mutual TLS was switched on or off. Those
 * rows get their tcp:// address back (their host kept, their port the one they hold), and a check keeps it so.
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    UPDATE shares
       SET frontend_endpoint = 'tcp://' || substring(frontend_endpoint from '^[a-z][a-z0-9+.-]*://([^/:]+|\\[[^]]+\\])') || ':' || tcp_port
     WHERE protocol = 'tcp' AND frontend_endpoint NOT LIKE 'tcp://%:' || tcp_port;
    ALTER TABLE shares ADD CONSTRAINT shares_tcp_endpoint_is_its_port
      CHECK (protocol <> 'tcp' OR frontend_endpoint LIKE 'tcp://%:' || tcp_port);
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
