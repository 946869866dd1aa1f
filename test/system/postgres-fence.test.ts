import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import pg from 'pg';
import { type HaStores, startHaStores } from '../../scripts/services/haStores.js';
import { waitFor } from '../helpers/stack.js';

/**
 * Split brain in `npm run start:ha`'s stores: when the old primary comes back writable after a failover, the moving
 * address never points at it again (the watcher fails over once and fences the old primary out), so no write made
 * through the service's DATABASE_URL lands on it.
 */

let stores: HaStores;
test.before(async () => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'pg-fence-'));
  chmodSync(dir, 0o755);
  stores = await startHaStores(dir, { checkMs: 200, failures: 3 });
});
test.after.always(async () => {
  await stores?.stop();
});

async function sql<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

test.serial('the old primary back, writable, after a failover: the address stays on the new primary and no write reaches the old one', async (t) => {
  const url = stores.databaseUrl;
  await sql(url, 'CREATE TABLE writes (n int)');
  await sql(url, 'INSERT INTO writes VALUES (1)');
  const { primary, standby } = stores.postgres;
  primary.kill();
  const { seconds } = await stores.promoted;
  t.log(`the watcher promoted the standby ${seconds.toFixed(1)} s after the primary went`);
  await waitFor(
    async () =>
      await sql(url, 'INSERT INTO writes VALUES (2)')
        .then(() => true)
        .catch(() => false),
    { what: 'writes on the promoted standby' },
  );

  // the old primary comes back as it was: a primary, taking writes from whoever reaches it
  const back = await stores.postgres.restartPrimary();
  const direct = stores.postgres.url(back.port, 'edgehub');
  t.deepEqual(await sql(direct, 'SELECT pg_is_in_recovery() AS recovery'), [{ recovery: false }], 'the old primary is writable again');
  for (let i = 3; i < 23; i++) {
    await sql(url, 'INSERT INTO writes VALUES ($1)', [i]);
    await new Promise((r) => setTimeout(r, 100));
  }
  t.is(stores.relay.target, standby.port, 'the address still names the promoted standby');
  const [{ port }] = await sql<{ port: number }>(url, 'SELECT inet_server_port() AS port');
  t.is(port, standby.port);
  const onOld = await sql<{ n: number }>(direct, 'SELECT n FROM writes ORDER BY n');
  t.deepEqual(
    onOld.map((r) => r.n),
    [1],
    'the old primary got none of the writes made after the failover',
  );
  const onNew = await sql<{ n: number }>(url, 'SELECT count(*)::int AS n FROM writes');
  t.is(onNew[0].n, 22);
});
