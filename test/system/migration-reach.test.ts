/**
 * Upgrading a database with agents: migration 1100 gives environments a reach. An environment that has an agent,
 * or had one (its enrollment spent, the agent since revoked), becomes 'agent' (its shares stay closed to the edge's
 * own network); one that never had an agent becomes 'edge'.
 */
import test from 'ava';
import { Sequelize } from 'sequelize';
import { migrate } from '../../domain/migrate.js';
import { emptyDatabase } from '../helpers/emptyDatabase.js';

const BEFORE_REACH = '1002-secret-key-probe.ts';

test('1100: environments that have or had agents get reach agent, the others reach edge', async (t) => {
  const sequelize = new Sequelize(await emptyDatabase('reach'), { logging: false });
  try {
    const applied = await migrate(sequelize, { to: BEFORE_REACH });
    t.is(applied.at(-1), BEFORE_REACH);
    await sequelize.query(`
      INSERT INTO hubs (id, name) VALUES ('hub_r', 'r');
      INSERT INTO environments (env_z_id, hub_id, description, created_by) VALUES ('with_agent', 'hub_r', '', 't'), ('had_agent', 'hub_r', '', 't'), ('never', 'hub_r', '', 't'), ('unspent', 'hub_r', '', 't');
      INSERT INTO agents (id, hub_id, env_z_id, certificate_pem, fingerprint_sha256, serial_number, not_before, not_after, created_by)
        VALUES ('ag1', 'hub_r', 'with_agent', 'pem', 'ff', '01', now(), now() + interval '1 year', 't');
      INSERT INTO agent_enrollments (id, hub_id, env_z_id, token_digest, expires_at, spent_at, created_by)
        VALUES ('en1', 'hub_r', 'had_agent', 'd1', now(), now(), 't'), ('en2', 'hub_r', 'unspent', 'd2', now() + interval '1 hour', NULL, 't');
    `);
    await migrate(sequelize);
    const [rows] = await sequelize.query(`SELECT env_z_id, reach FROM environments ORDER BY env_z_id`);
    t.deepEqual(rows, [
      { env_z_id: 'had_agent', reach: 'agent' },
      { env_z_id: 'never', reach: 'edge' },
      { env_z_id: 'unspent', reach: 'edge' },
      { env_z_id: 'with_agent', reach: 'agent' },
    ]);
    // the database refuses any other value
    await t.throwsAsync(sequelize.query(`UPDATE environments SET reach = 'both' WHERE env_z_id = 'never'`));
  } finally {
    await sequelize.close();
  }
});
