/**
 * Upgrading a database that already holds data: migration 0801 seals the certificate request token strings that
 * earlier versions kept in clear. A database is built with the migrations up to 0800, given a hub and tokens the way
 * that version stored them, migrated the rest of the way, and then served: the tokens read back as they were, redeem,
 * and nothing in the table is the clear string any more.
 */
import { randomBytes } from 'node:crypto';
import test from 'ava';
import pg from 'pg';
import { Sequelize } from 'sequelize';
import { resetConfig } from '../../shared/config.js';
import { migrate } from '../../domain/migrate.js';
import { registerSecret } from '../helpers/logScan.js';
import { makeCsr } from '../helpers/pki.js';
import { emptyDatabase } from '../helpers/emptyDatabase.js';
import { makeCall, startStack, type Stack } from '../helpers/stack.js';

const BEFORE_SEALING = '0800-signing-key-revocation.ts';
const secretKey = randomBytes(32).toString('hex');
registerSecret('secret key', secretKey);

let stack: Stack | undefined;
let databaseUrl: string;
const tokens = [
  { id: 'tok_upgrade_open', name: 'open', token: randomBytes(24).toString('base64url') },
  { id: 'tok_upgrade_spent', name: 'spent', token: randomBytes(24).toString('base64url'), spent: true },
];
for (const t of tokens) registerSecret('token string', t.token);

test.before(async () => {
  databaseUrl = await emptyDatabase('upgrade');

  // the same HUB_SECRET_KEY for the migration and the service that reads its output
  process.env.HUB_SECRET_KEY = secretKey;
  resetConfig();
  const sequelize = new Sequelize(databaseUrl, { logging: false });
  try {
    const applied = await migrate(sequelize, { to: BEFORE_SEALING });
    if (applied.at(-1) !== BEFORE_SEALING) throw new Error(`migrated to ${applied.at(-1)}`);
    // the data as the version before 0801 wrote it: token strings in clear, their digest from the trigger
    await sequelize.query(`INSERT INTO hubs (id, name) VALUES ('hub_upgrade', 'upgrade')`);
    for (const t of tokens) {
      await sequelize.query(
        `INSERT INTO certificate_request_tokens (id, hub_id, name, token, expires_at, spent_at, created_by)
         VALUES (:id, 'hub_upgrade', :name, :token, now() + interval '1 day', :spentAt, 'test')`,
        { replacements: { ...t, spentAt: t.spent ? new Date() : null } },
      );
      await sequelize.query(`INSERT INTO pki_names (hub_id, name, token_id) VALUES ('hub_upgrade', :name, :id)`, { replacements: t });
    }
    await migrate(sequelize);
  } finally {
    await sequelize.close();
  }
  stack = await startStack({ databaseUrl, env: { HUB_SECRET_KEY: secretKey } });
});

test.after.always(async () => {
  await stack?.stop();
});

test('0801 on a database with tokens: strings sealed at rest, read back and redeemable as before', async (t) => {
  const s = stack as Stack;
  const key = await s.call('POST', '/admin/v1/hubs/hub_upgrade/api-keys', { auth: s.admin, body: { name: 'k' } });
  t.is(key.status, 201, key.text);
  const call = makeCall(s.baseUrl, `Bearer ${key.json.token}`);
  const h = '/hub/hub_upgrade';

  for (const tok of tokens) {
    const got = await call('GET', `${h}/certificate-request-tokens/${tok.id}`);
    t.is(got.status, 200, got.text);
    t.is(got.json.token, tok.token, `${tok.name}: the same token string after the upgrade`);
    // looked up by its digest, as before
    const byToken = await call('GET', `${h}/certificate-request-tokens/by-token/${tok.token}`);
    t.is(byToken.json.id, tok.id);
  }

  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  try {
    const columns = await sql.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'certificate_request_tokens'`);
    t.false(
      columns.rows.some((c) => c.column_name === 'token'),
      'the clear column is gone',
    );
    const { rows } = await sql.query(`SELECT id, token_sealed FROM certificate_request_tokens ORDER BY id`);
    t.is(rows.length, tokens.length);
    for (const row of rows) {
      const clear = tokens.find((x) => x.id === row.id)!.token;
      t.false(row.token_sealed.includes(clear), 'sealed, not the clear string');
    }
  } finally {
    await sql.end();
  }

  const open = tokens[0];
  const redeemed = await s.call('POST', `/hub/v2/hub_upgrade/client-certificates/token/${open.token}`, {
    body: { type: 'CSR', value: await makeCsr('/CN=upgraded') },
  });
  t.is(redeemed.status, 201, redeemed.text);
  t.is(redeemed.json.name, 'open');
  const spent = await s.call('POST', `/hub/v2/hub_upgrade/client-certificates/token/${tokens[1].token}`, {
    body: { type: 'CSR', value: await makeCsr('/CN=spent') },
  });
  t.is(spent.status, 403, 'a token spent before the upgrade stays spent');
});
