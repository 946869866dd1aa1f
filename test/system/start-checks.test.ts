/**
 * What `npm start` tells a person: a port already taken stops it at once in one line naming the port and the
 * variable (nothing started, no admin token, no stack trace); the embedded services' URLs with the password hidden;
 * one `ready` line once everything answers. And a process started from the Procfile logs its role.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { registerSecret } from '../helpers/logScan.js';
import { pidAlive, spawnScript, type Spawned } from '../helpers/processes.js';
import { startStack, type Stack } from '../helpers/stack.js';

const runs: Spawned[] = [];
let stack: Stack | undefined;

test.after.always(async () => {
  for (const run of runs) if (run.child.pid && pidAlive(run.child.pid)) process.kill(-run.child.pid, 'SIGKILL');
  await stack?.stop();
});

function dataDir(): string {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'start-'));
  chmodSync(dir, 0o755);
  return dir;
}

async function start(env: Record<string, string | undefined>): Promise<Spawned> {
  const adminToken = randomBytes(24).toString('base64url');
  registerSecret('admin token', adminToken);
  // a TCP share range of its own (one free port), so that test files starting stacks side by side do not collide there
  const tcp = String(await freePort());
  const run = spawnScript(
    'scripts/start.ts',
    {
      DATABASE_URL: undefined,
      REDIS_URL: undefined,
      HUB_DATA_DIR: dataDir(),
      HUB_ADMIN_TOKEN: adminToken,
      HUB_EDGE_HTTPS_PORT: '0',
      HUB_EDGE_TCP_PORTS: `${tcp}-${tcp}`,
      ...env,
    },
    { detached: true },
  );
  runs.push(run);
  return run;
}

const exited = (run: Spawned) =>
  run.child.exitCode !== null ? Promise.resolve(run.child.exitCode) : new Promise<number | null>((resolve) => run.child.once('exit', (code) => resolve(code)));

for (const variable of ['PORT', 'HUB_EDGE_HTTP_PORT'] as const) {
  test(`a taken ${variable} stops npm start at once, in one line naming the port and the variable`, async (t) => {
    const holder = net.createServer().listen(0);
    await new Promise((r) => holder.once('listening', r));
    const taken = (holder.address() as net.AddressInfo).port;
    try {
      const other = String(await freePort());
      const run = await start({
        PORT: variable === 'PORT' ? String(taken) : other,
        HUB_EDGE_HTTP_PORT: variable === 'PORT' ? String(await freePort()) : String(taken),
      });
      t.is(await exited(run), 1);
      const out = run.output();
      t.regex(out, new RegExp(`edgehub: port ${taken} \\(${variable}\\) is already in use by another program: stop it, or set ${variable} to a free port`));
      t.notRegex(out, /admin token|PostgreSQL started|redis-server started|\n\s+at /, 'nothing started, no token, no stack trace');
      t.is(out.trim().split('\n').length, 1, out);
    } finally {
      holder.close();
    }
  });
}

test('a taken port of HUB_EDGE_TCP_PORTS stops npm start before it writes anything into its data folder', async (t) => {
  const holder = net.createServer().listen(0);
  await new Promise((r) => holder.once('listening', r));
  const taken = (holder.address() as net.AddressInfo).port;
  try {
    const dir = dataDir();
    // no HUB_ADMIN_TOKEN: a start that went on would store a generated one (and the secret key) in the folder
    const run = await start({
      HUB_DATA_DIR: dir,
      HUB_ADMIN_TOKEN: undefined,
      HUB_SECRET_KEY: undefined,
      PORT: String(await freePort()),
      HUB_EDGE_HTTP_PORT: String(await freePort()),
      HUB_EDGE_TCP_PORTS: `${taken}-${taken}`,
    });
    t.is(await exited(run), 1);
    const out = run.output();
    t.regex(
      out,
      new RegExp(
        `edgehub: port ${taken} of HUB_EDGE_TCP_PORTS ${taken}-${taken} \\(the ports of TCP shares\\) is already in use by another program: stop it, or set HUB_EDGE_TCP_PORTS to a free range`,
      ),
    );
    t.is(out.trim().split('\n').length, 1, out);
    t.deepEqual(readdirSync(dir), [], 'no admin-token, no secret-key');
  } finally {
    holder.close();
  }
});

test('a taken PORT stops npm start before it writes the admin token and the secret key', async (t) => {
  const holder = net.createServer().listen(0);
  await new Promise((r) => holder.once('listening', r));
  try {
    const dir = dataDir();
    const run = await start({
      HUB_DATA_DIR: dir,
      HUB_ADMIN_TOKEN: undefined,
      HUB_SECRET_KEY: undefined,
      PORT: String((holder.address() as net.AddressInfo).port),
    });
    t.is(await exited(run), 1);
    t.deepEqual(readdirSync(dir), [], run.output());
  } finally {
    holder.close();
  }
});

test('a second npm start on one machine with the same HUB_EDGE_TCP_PORTS stops at once, naming the setting', async (t) => {
  t.timeout(4 * 60_000);
  const tcp = await freePort();
  const range = `${tcp}-${tcp}`;
  const first = await start({ PORT: String(await freePort()), HUB_EDGE_HTTP_PORT: String(await freePort()), HUB_EDGE_TCP_PORTS: range });
  await first.waitForLine(/edgehub: ready\./, 'the first stack', 180_000);
  const dir = dataDir();
  const second = await start({
    HUB_DATA_DIR: dir,
    HUB_ADMIN_TOKEN: undefined,
    PORT: String(await freePort()),
    HUB_EDGE_HTTP_PORT: String(await freePort()),
    HUB_EDGE_TCP_PORTS: range,
  });
  t.is(await exited(second), 1);
  const out = second.output();
  t.regex(
    out,
    new RegExp(
      `edgehub: HUB_EDGE_TCP_PORTS ${range} \\(the ports of TCP shares\\) is already used by another edgehub on this machine \\(npm start, pid ${first.child.pid}\\): stop it, or set HUB_EDGE_TCP_PORTS to another range`,
    ),
  );
  t.is(out.trim().split('\n').length, 1, out);
  t.deepEqual(readdirSync(dir), []);
  process.kill(-first.child.pid!, 'SIGTERM');
  t.is(await exited(first), 0);
});

test('npm start prints the embedded services with their passwords hidden, then one ready line', async (t) => {
  t.timeout(4 * 60_000);
  const run = await start({ PORT: String(await freePort()), HUB_EDGE_HTTP_PORT: String(await freePort()) });
  await run.waitForLine(/edgehub: ready\. Console: http:\/\/localhost:\d+\/console/, 'the ready line', 180_000);
  const out = run.output();
  const database = /DATABASE_URL=(\S+)/.exec(out)?.[1] ?? '';
  t.regex(database, /^postgres(ql)?:\/\/[^:]+:\*\*\*\*@127\.0\.0\.1:\d+\/edgehub$/);
  t.regex(out, /REDIS_URL=redis:\/\/:\*\*\*\*@127\.0\.0\.1:\d+/);
  process.kill(-run.child.pid!, 'SIGTERM');
  t.is(await exited(run), 0);
});

test.serial('a process started as the Procfile says logs its role, not "app"', async (t) => {
  stack ??= await startStack({ workers: false });
  // the clock, as `clock: node --import tsx workers/clock.ts` starts it (no HUB_PROCESS in its environment)
  const run = spawnScript('workers/clock.ts', { DATABASE_URL: stack.databaseUrl, HUB_PROCESS: undefined });
  runs.push(run);
  await run.waitForLine(/"proc":"clock"/, 'a log line of the clock');
  t.notRegex(run.output(), /"proc":"app"/);
  await run.kill();
});

test.serial('a worker with another HUB_SECRET_KEY refuses to run, saying so in one line; with the same key it runs', async (t) => {
  stack ??= await startStack({ workers: false });
  const own = stack;
  const { verifySecretKey } = await import('../../shared/secretKeyProbe.js');
  const { config } = await import('../../shared/config.js');
  await verifySecretKey(); // the deployment's first process seals the probe with its key
  const other = spawnScript('workers/index.ts', { DATABASE_URL: own.databaseUrl, HUB_SECRET_KEY: randomBytes(32).toString('hex') });
  runs.push(other);
  t.is(await exited(other), 2);
  t.regex(other.output(), /edgehub: HUB_SECRET_KEY is not the key this database's secrets are sealed with/);
  t.notRegex(other.output(), /\n\s+at /, 'no stack trace');
  const same = spawnScript('workers/index.ts', { DATABASE_URL: own.databaseUrl, HUB_SECRET_KEY: config().secretKey.toString('hex') });
  runs.push(same);
  await same.waitForLine(/workers started/, 'the worker with the right key');
  await same.kill();
});
