import type { MigrationContext } from '../migrate.js';

/**
 * What a TCP share is, kept by the database:
 * - its public address is tcp://HOST:PORT with PORT its own edge port, whatever its mutualTls (an earlier update
 *   turned it into the https:// address of the HTTP TLS listener when mutual TLS was switched on or off: those rows
 *   get their tcp:// address back, their host kept, their port the one they hold);
 * - it carries bytes: no login (an earlier update let an auth provider onto one; the edge never asked a TCP client to
 *   log in, so clearing it changes nothing that was enforced), no HTTP/2 towards the target, no request inspection.
 * And what the API already refused: inspection of a share that speaks HTTP/2 to its target (not recorded).
 */
export async function up({ context: q }: MigrationContext): Promise<void> {
  await q.sequelize.query(`
    UPDATE shares
       SET frontend_endpoint = 'tcp://' || substring(frontend_endpoint from '^[a-z][a-z0-9+.-]*://([^/:]+|\\[[^]]+\\])') || ':' || tcp_port
     WHERE protocol = 'tcp' AND frontend_endpoint NOT LIKE 'tcp://%:' || tcp_port;
    UPDATE shares SET auth_provider_id = NULL, oauth_email_domains = NULL, oauth_check_interval = NULL
     WHERE protocol = 'tcp' AND (auth_provider_id IS NOT NULL OR oauth_email_domains IS NOT NULL OR oauth_check_interval IS NOT NULL);
    ALTER TABLE shares ADD CONSTRAINT shares_tcp_endpoint_is_its_port
      CHECK (protocol <> 'tcp' OR frontend_endpoint LIKE 'tcp://%:' || tcp_port);
    ALTER TABLE shares ADD CONSTRAINT shares_tcp_carries_bytes
      CHECK (protocol <> 'tcp' OR (auth_provider_id IS NULL AND oauth_email_domains IS NULL AND oauth_check_interval IS NULL
                                   AND target_protocol = 'http1' AND NOT inspect));
    ALTER TABLE shares ADD CONSTRAINT shares_inspect_http1_targets CHECK (NOT (inspect AND target_protocol = 'h2'));
  `);
}

export async function down(): Promise<void> {
  throw new Error('migrations are one-way');
}
