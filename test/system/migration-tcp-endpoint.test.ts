/**
 * Upgrading a database with TCP shares: migration 1402 gives back the tcp://HOST:PORT address of a TCP share whose
 * address an earlier update of its mutualTls had turned into the https:// address of the HTTP TLS listener (its host
 * kept, its port the one it holds) and clears a login an update let onto one, leaves the others as they are, and from
 * then on the database refuses a TCP share whose address is not tcp:// on its own port, or that has a login, HTTP/2
 * towards its target or inspection.
 */
import test from 'ava';
import { Sequelize } from 'sequelize';
import { migrate } from '../../domain/migrate.js';
import { emptyDatabase } from '../helpers/emptyDatabase.js';

const BEFORE = '1401-tcp-shares.ts';

test('1402: a TCP share with an https:// address gets tcp://HOST:ITS-PORT back; the database keeps it so', async (t) => {
  const sequelize = new Sequelize(await emptyDatabase('tcp_endpoint'), { logging: false });
  try {
    const applied = await migrate(sequelize, { to: BEFORE });
    t.is(applied.at(-1), BEFORE);
    const share = (zId: string, endpoint: string, protocol: string, port: number | null, login = false) =>
      `('${zId}', 'hub_t', 'e1', 'share ${zId}', 'f1', '${endpoint}', '${protocol === 'tcp' ? 'tcp://10.0.0.5:22' : 'http://10.0.0.5/'}', 'ACTIVE', 't', '${protocol}', ${port ?? 'NULL'}, ${login ? "'ap1', '[\"example.com\"]'" : 'NULL, NULL'})`;
    await sequelize.query(`
      INSERT INTO hubs (id, name) VALUES ('hub_t', 't');
      INSERT INTO environments (env_z_id, hub_id, description, created_by) VALUES ('e1', 'hub_t', '', 't');
      INSERT INTO auth_providers (id, hub_id, name, type, client_id, client_secret_sealed, created_by) VALUES ('ap1', 'hub_t', 'gh', 'GITHUB', 'x', 'sealed', 't');
      INSERT INTO shares (z_id, hub_id, env_z_id, name, frontend_id, frontend_endpoint, target, status, created_by, protocol, tcp_port, auth_provider_id, oauth_email_domains) VALUES
        ${share('broken', 'https://broken.share.localhost:8443', 'tcp', 20001, true)},
        ${share('brokenback', 'http://brokenback.share.example.com:8000', 'tcp', 20002)},
        ${share('fine', 'tcp://fine.share.localhost:20003', 'tcp', 20003)},
        ${share('web', 'https://web.share.localhost:8443', 'http', null, true)};
    `);
    await migrate(sequelize);
    const [rows] = await sequelize.query(`SELECT z_id, frontend_endpoint, auth_provider_id FROM shares ORDER BY z_id`);
    t.deepEqual(rows, [
      // a login a PATCH let onto a TCP share goes (the edge never enforced it); an HTTP share keeps its own
      { z_id: 'broken', frontend_endpoint: 'tcp://broken.share.localhost:20001', auth_provider_id: null },
      { z_id: 'brokenback', frontend_endpoint: 'tcp://brokenback.share.example.com:20002', auth_provider_id: null },
      { z_id: 'fine', frontend_endpoint: 'tcp://fine.share.localhost:20003', auth_provider_id: null },
      { z_id: 'web', frontend_endpoint: 'https://web.share.localhost:8443', auth_provider_id: 'ap1' },
    ]);
    // the database refuses a TCP share's address that is not tcp:// on its own port
    await t.throwsAsync(sequelize.query(`UPDATE shares SET frontend_endpoint = 'https://fine.share.localhost:8443' WHERE z_id = 'fine'`));
    await t.throwsAsync(sequelize.query(`UPDATE shares SET tcp_port = 20009 WHERE z_id = 'fine'`));
    // nor login, HTTP/2 towards the target or inspection on a TCP share
    for (const change of [`auth_provider_id = 'ap1'`, `oauth_check_interval = 'PT1H'`, `target_protocol = 'h2'`, 'inspect = true']) {
      await t.throwsAsync(sequelize.query(`UPDATE shares SET ${change} WHERE z_id = 'fine'`), undefined, change);
    }
    await sequelize.query(`UPDATE shares SET frontend_endpoint = 'http://web.share.localhost:8000' WHERE z_id = 'web'`);
    // an HTTP share may speak HTTP/2 to its target, or be inspected, not both
    await sequelize.query(`UPDATE shares SET target_protocol = 'h2' WHERE z_id = 'web'`);
    await t.throwsAsync(sequelize.query(`UPDATE shares SET inspect = true WHERE z_id = 'web'`));
  } finally {
    await sequelize.close();
  }
});
