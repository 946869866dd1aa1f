/**
 * The auth cache (api/middleware/authCache.ts) across processes: two real web processes (child processes on the
 * same database) keep keys and hubs in memory, and a revocation or hub change made anywhere (a third process, or SQL
 * straight into the table) reaches both within a second, also after their LISTEN connection was cut.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { config } from '../../../shared/config.js';
import pg from 'pg';
import { freePort } from '../../../scripts/services/index.js';
import { type Call, makeCall, useStack, waitFor } from '../../helpers/stack.js';
import { scriptArgs } from '../../helpers/script.js';

// the in-process stack makes the database and is the "third process" that changes things
const stack = useStack(test, { workers: false });
stack.onStop(async () => {
  await Promise.all(
    web.map(
      ({ child }) => new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', () => resolve()), child.kill('SIGTERM')))),
    ),
  );
  await db?.end();
});
let db: pg.Client;
const web: { child: ChildProcess; call: Call }[] = [];

async function startWeb(): Promise<{ child: ChildProcess; call: Call }> {
  const port = await freePort();
  const child = spawn(process.execPath, scriptArgs('api/server.ts'), {
    env: {
      ...process.env,
      PORT: String(port),
      HUB_PROCESS: 'web',
      HUB_DATA_DIR: mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'web-')),
      // the deployment's secret key (every process of a deployment shares it; a process with another refuses to run)
      HUB_SECRET_KEY: config().secretKey.toString('hex'),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const call = makeCall(`http://127.0.0.1:${port}`);
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error('web process exited');
      return (await call('GET', '/healthz').catch(() => ({ status: 0 }))).status === 200;
    },
    { timeoutMs: 60_000, intervalMs: 100, what: 'a web process to answer /healthz' },
  );
  return { child, call };
}

test.before(async () => {
  web.push(...(await Promise.all([startWeb(), startWeb()])));
  db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
});

const WITHIN = { timeoutMs: 1000, intervalMs: 20 };
const statusOnEach = (path: string, auth: string) => Promise.all(web.map((w) => w.call('GET', path, { auth }).then((r) => r.status)));

test.serial('a key revoked through the API is refused by both web processes within a second', async (t) => {
  const hub = await stack.hub();
  const path = `${hub.h}/certificate-request-tokens`;
  // both have the key and its hub cached now (and answer from the cache from here on)
  for (let i = 0; i < 3; i++) t.deepEqual(await statusOnEach(path, hub.bearer), [200, 200]);
  const revoke = await stack.call('DELETE', `/admin/v1/hubs/${hub.hubId}/api-keys/${hub.keyId}`, { auth: stack.admin });
  t.is(revoke.status, 200);
  for (const [i, w] of web.entries()) {
    await waitFor(async () => (await w.call('GET', path, { auth: hub.bearer })).status === 401, {
      ...WITHIN,
      what: `web process ${i + 1} to refuse the revoked key`,
    });
    const r = await w.call('GET', path, { auth: hub.basic });
    t.is(r.status, 401, 'Basic with the same token too');
    t.is(r.json.error, 'unauthorized');
  }
});

test.serial('a key revoked by SQL straight into the table is refused by both within a second', async (t) => {
  const hub = await stack.hub();
  const path = `${hub.h}/environments`;
  t.deepEqual(await statusOnEach(path, hub.bearer), [200, 200]);
  t.deepEqual(await statusOnEach(path, hub.bearer), [200, 200]);
  await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [hub.keyId]);
  for (const [i, w] of web.entries()) {
    await waitFor(async () => (await w.call('GET', path, { auth: hub.bearer })).status === 401, { ...WITHIN, what: `web process ${i + 1} to refuse the key` });
  }
  t.pass();
});

test.serial('a hub change (IPsec switched on, then off) reaches both within a second', async (t) => {
  const hub = await stack.hub({ ipsec: false });
  const tunnels = `${hub.h}/ipsec-tunnels`;
  t.deepEqual(await statusOnEach(tunnels, hub.bearer), [403, 403]);
  t.is((await stack.call('PATCH', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin, body: { features: { ipsec: true } } })).status, 200);
  for (const [i, w] of web.entries()) {
    await waitFor(async () => (await w.call('GET', tunnels, { auth: hub.bearer })).status === 200, { ...WITHIN, what: `web process ${i + 1} to see IPsec on` });
  }
  await db.query(`UPDATE hubs SET features = '{"ipsec": false}' WHERE id = $1`, [hub.hubId]);
  for (const [i, w] of web.entries()) {
    await waitFor(async () => (await w.call('GET', tunnels, { auth: hub.bearer })).status === 403, {
      ...WITHIN,
      what: `web process ${i + 1} to see IPsec off`,
    });
  }
  t.pass();
});

test.serial('a revocation made while the LISTEN connections are cut is still honoured (cache off until they are back)', async (t) => {
  const hub = await stack.hub();
  const path = `${hub.h}/environments`;
  t.deepEqual(await statusOnEach(path, hub.bearer), [200, 200]);
  t.deepEqual(await statusOnEach(path, hub.bearer), [200, 200]);
  // cut every listening connection of this database, then revoke before they can reconnect
  const cut = await db.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE '%-listen' AND pid <> pg_backend_pid()`,
  );
  t.true(cut.rowCount! >= 2, 'both web processes (and the in-process API) had a LISTEN connection');
  await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [hub.keyId]);
  for (const [i, w] of web.entries()) {
    await waitFor(async () => (await w.call('GET', path, { auth: hub.bearer })).status === 401, { ...WITHIN, what: `web process ${i + 1} to refuse the key` });
  }
  // and once reconnected, a later revocation is heard again
  const other = await stack.call('POST', `/admin/v1/hubs/${hub.hubId}/api-keys`, { auth: stack.admin, body: { name: 'second' } });
  const bearer = `Bearer ${other.json.token}`;
  await waitFor(
    async () => {
      const listening = await db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE '%-listen'`,
      );
      return listening.rows[0].n >= 3;
    },
    { timeoutMs: 10_000, what: 'the LISTEN connections to come back' },
  );
  t.deepEqual(await statusOnEach(path, bearer), [200, 200]);
  t.deepEqual(await statusOnEach(path, bearer), [200, 200]);
  await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [other.json.id]);
  for (const [i, w] of web.entries()) {
    await waitFor(async () => (await w.call('GET', path, { auth: bearer })).status === 401, {
      ...WITHIN,
      what: `web process ${i + 1} to refuse the second key`,
    });
  }
  t.pass();
});
