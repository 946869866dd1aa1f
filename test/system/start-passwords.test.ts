/**
 * `npm start`'s embedded PostgreSQL and redis-server have passwords of their own: generated on the first start and
 * kept in HUB_DATA_DIR (mode 0600), never printed. PostgreSQL refuses the fixed password earlier versions gave it,
 * Redis refuses a client that does not authenticate. A data folder of an earlier version (its cluster made with the
 * fixed password) keeps working: the cluster is given the generated password at the first start.
 */
import { chmodSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { LEGACY_POSTGRES_PASSWORD, startPostgres } from '../../scripts/services/index.js';
import { registerSecret } from '../helpers/logScan.js';
import { cleanUpHubs, startHub, type Run } from '../helpers/npmStart.js';
import { makeCall, waitFor } from '../helpers/stack.js';

cleanUpHubs(test);

/** What a raw connection to Redis at `port` answers to `command` (its first line). */
function redisAnswer(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let text = '';
    socket.on('data', (d) => {
      text += d;
      if (text.includes('\r\n')) {
        socket.destroy();
        resolve(text.split('\r\n')[0]);
      }
    });
    socket.on('error', reject);
    socket.write(command);
  });
}

/** The error code PostgreSQL at `port` answers a login of its superuser with `password` (undefined: it took it). */
async function loginError(port: number, password: string): Promise<string | undefined> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'edgehub' });
  try {
    await client.connect();
    await client.end();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

/** The stores of a running `npm start`, and its passwords as kept in its data folder. */
async function checkStores(t: ExecutionContext, run: Run): Promise<void> {
  const call = makeCall(`http://127.0.0.1:${run.port}`);
  await waitFor(async () => (await call('GET', '/healthz').catch(() => ({ status: 0 }))).status === 200, {
    what: 'the API healthy',
    timeoutMs: 60_000,
    intervalMs: 250,
  });
  const kept: Record<string, string> = {};
  for (const name of ['postgres-password', 'redis-password']) {
    const file = path.join(run.dataDir, name);
    t.is(statSync(file).mode & 0o777, 0o600, `${name} is readable by its owner alone`);
    kept[name] = readFileSync(file, 'utf8').trim();
    t.true(kept[name].length >= 32, name);
    registerSecret(name, kept[name]);
  }
  const output = run.start.output();
  const postgresPort = Number(/PostgreSQL started \(pid \d+, port (\d+)\)/.exec(output)![1]);
  const redisPort = Number(/redis-server started \(pid \d+, port (\d+)\)/.exec(output)![1]);
  t.is(await loginError(postgresPort, LEGACY_POSTGRES_PASSWORD), '28P01', 'PostgreSQL refuses the old fixed password');
  t.is(await loginError(postgresPort, kept['postgres-password']), undefined, 'and takes the kept one');
  t.regex(await redisAnswer(redisPort, 'PING\r\n'), /^-NOAUTH/, 'Redis refuses a client that does not authenticate');
  t.is(await redisAnswer(redisPort, `AUTH ${kept['redis-password']}\r\n`), '+OK', 'and takes the kept password');
  for (const password of Object.values(kept)) t.false(output.includes(password), 'no password is printed');
  t.regex(output, /DATABASE_URL=postgres:\/\/postgres:\*\*\*\*@/);
  t.regex(output, /REDIS_URL=redis:\/\/:\*\*\*\*@/);
}

async function stop(t: ExecutionContext, run: Run): Promise<void> {
  run.start.child.kill('SIGTERM');
  const code = await new Promise((resolve) => run.start.child.once('exit', (c) => resolve(c)));
  t.is(code, 0, run.start.output().slice(-3000));
}

test.serial('npm start: PostgreSQL and Redis get generated passwords, kept in the data folder (0600), never printed', async (t) => {
  t.timeout(4 * 60_000);
  const run = await startHub();
  await checkStores(t, run);
  await stop(t, run);
});

test.serial('npm start: a data folder whose PostgreSQL has the old fixed password keeps working, with a generated password from then on', async (t) => {
  t.timeout(4 * 60_000);
  const dataDir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'upgrade-'));
  chmodSync(dataDir, 0o755); // the postgres user must reach the data dir
  // the cluster as an earlier version made it
  const earlier = await startPostgres(path.join(dataDir, 'postgres'), { persistent: true, database: 'edgehub' });
  await earlier.stop();
  const run = await startHub({ dataDir });
  await checkStores(t, run);
  await stop(t, run);
});
