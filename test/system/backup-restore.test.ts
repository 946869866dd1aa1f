/**
 * The cold backup of docs/production.md, as written there: `npm start` stopped, its data folder packed with tar
 * (PostgreSQL, Redis, the secret key and the admin token), the stores emptied, the archive unpacked, `npm start`
 * again: the hub and its API key are back, and the worker runs (its probe of HUB_SECRET_KEY against the restored
 * database passes).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { registerSecret } from '../helpers/logScan.js';
import { pidAlive, spawnScript, type Spawned } from '../helpers/processes.js';
import { makeCall, waitFor } from '../helpers/stack.js';

const runs: Spawned[] = [];
test.after.always(() => {
  for (const run of runs) if (run.child.pid && pidAlive(run.child.pid)) process.kill(-run.child.pid, 'SIGKILL');
});

const exited = (run: Spawned) =>
  run.child.exitCode !== null ? Promise.resolve(run.child.exitCode) : new Promise<number | null>((resolve) => run.child.once('exit', (code) => resolve(code)));

test('a stopped npm start packed with tar, emptied and unpacked starts again with its hubs, keys and secret key', async (t) => {
  t.timeout(5 * 60_000);
  const dataDir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'backup-'));
  chmodSync(dataDir, 0o755); // the postgres user must reach the data dir
  const port = await freePort();
  const tcp = await freePort();
  const env = {
    DATABASE_URL: undefined,
    REDIS_URL: undefined,
    HUB_ADMIN_TOKEN: undefined,
    HUB_SECRET_KEY: undefined,
    HUB_DATA_DIR: dataDir,
    PORT: String(port),
    HUB_EDGE_HTTP_PORT: String(await freePort()),
    HUB_EDGE_HTTPS_PORT: '0',
    HUB_EDGE_TCP_PORTS: `${tcp}-${tcp}`,
  };
  const start = async () => {
    const run = spawnScript('scripts/start.ts', env, { detached: true });
    runs.push(run);
    await run.waitForLine(/edgehub: ready\./, 'the ready line', 180_000);
    return run;
  };
  const stop = async (run: Spawned) => {
    process.kill(-run.child.pid!, 'SIGINT');
    t.is(await exited(run), 0);
  };

  const first = await start();
  const adminToken = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
  registerSecret('admin token', adminToken);
  const call = makeCall(`http://127.0.0.1:${port}`);
  const hub = await call('POST', '/admin/v1/hubs', { auth: `Bearer ${adminToken}`, body: { name: 'kept' } });
  t.is(hub.status, 201);
  const key = await call('POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { auth: `Bearer ${adminToken}`, body: { name: 'k' } });
  registerSecret('api key', key.json.token);
  await stop(first);

  const archive = path.join(mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'backup-archive-')), 'edgehub.tgz');
  // the commands of docs/production.md
  execFileSync('tar', ['-C', dataDir, '-czf', archive, '--exclude=build', 'postgres', 'redis', 'secret-key', 'admin-token']);
  const secretKey = readFileSync(path.join(dataDir, 'secret-key'), 'utf8');
  for (const name of ['postgres', 'redis', 'secret-key', 'admin-token']) rmSync(path.join(dataDir, name), { recursive: true, force: true });
  t.false(existsSync(path.join(dataDir, 'postgres')));
  execFileSync('tar', ['-C', dataDir, '-xzf', archive]);
  t.is(readFileSync(path.join(dataDir, 'secret-key'), 'utf8'), secretKey);

  const second = await start();
  t.notRegex(second.output(), /HUB_SECRET_KEY is not the key/);
  const hubs = await call('GET', '/admin/v1/hubs', { auth: `Bearer ${adminToken}` });
  t.deepEqual(
    hubs.json.content.map((h: { name: string }) => h.name),
    ['kept'],
  );
  const account = await waitFor(
    async () => {
      const r = await call('GET', '/account', { auth: `Bearer ${key.json.token}` });
      return r.status === 200 && r;
    },
    { what: 'the API key signing in' },
  );
  t.is(account.json.hubId, hub.json.id);
  await second.waitForLine(/worker started \(pid \d+/, 'the worker');
  await stop(second);
});
