import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import test from 'ava';
import Koa from 'koa';
import { requestEdge } from '../../api/middleware/requestEdge.js';
import { freePort } from '../../scripts/services/index.js';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { makeCall, useStack, waitFor } from '../helpers/stack.js';
import { scriptArgs } from '../helpers/script.js';
import { assertRefused } from '../helpers/refusals.js';

const stack = useStack(test, { workers: false });
stack.onStop(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});
const children: ChildProcess[] = [];

function run(script: string, env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, scriptArgs(script), { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return child;
}

const exitOf = async (child: ChildProcess) => (child.exitCode !== null ? child.exitCode : (await once(child, 'exit'))[0]);

test('a bad configuration value is refused at start with a message naming it', (t) => {
  const error = t.throws(() => loadConfig({ ...process.env, PORT: 'eighty' }), { instanceOf: ConfigError });
  t.regex(error!.message, /PORT/);
  t.throws(() => loadConfig({ ...process.env, HUB_SECRET_KEY: 'short' }), { message: /HUB_SECRET_KEY/ });
  t.throws(() => loadConfig({ ...process.env, DATABASE_URL: 'mysql://x' }), { message: /DATABASE_URL/ });
  t.throws(() => loadConfig({ ...process.env, HUB_DNS_SERVERS: 'nope' }), { message: /HUB_DNS_SERVERS/ });
  t.throws(() => loadConfig({ ...process.env, HUB_SCHEDULED_EXECUTION_RETENTION: 'weekly' }), { message: /HUB_SCHEDULED_EXECUTION_RETENTION/ });
  t.throws(() => loadConfig({ ...process.env, HUB_METRICS_RAW_RETENTION: 'P0D' }), { message: /HUB_METRICS_RAW_RETENTION/ });
  t.throws(() => loadConfig({ ...process.env, HUB_DNS_SERVERS: 'dns.example.com:53' }), { message: /ip:port/ }, 'resolvers are IP addresses');
  const start = spawnSync(process.execPath, scriptArgs('scripts/start.ts'), { env: { ...process.env, PORT: '99999' }, encoding: 'utf8' });
  t.is(start.status, 2);
  t.regex(start.stderr, /PORT/);
});

test('the web process serves, then stops cleanly on SIGTERM', async (t) => {
  const port = await freePort();
  const web = run('api/server.ts', { PORT: String(port), HUB_PROCESS: 'web' });
  const call = makeCall(`http://127.0.0.1:${port}`);
  await waitFor(async () => (await call('GET', '/healthz').catch(() => ({ status: 0 }))).status === 200, { what: 'web up', timeoutMs: 30_000 });
  web.kill('SIGTERM');
  t.is(await exitOf(web), 0);
});

test('the worker and clock processes stop cleanly on SIGTERM', async (t) => {
  for (const script of ['workers/index.ts', 'workers/clock.ts']) {
    const child = run(script);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    await waitFor(async () => /workers started|clock started/.test(out), { what: `${script} up`, timeoutMs: 30_000 }).catch((err) => {
      throw new Error(`${err.message}\n${out.slice(-2000)}`);
    });
    child.kill('SIGTERM');
    t.is(await exitOf(child), 0, script);
  }
});

test('an unexpected error is a 500 without detail, with the request id', async (t) => {
  const app = new Koa();
  app.silent = true;
  app.use(requestEdge);
  app.use(() => {
    throw new Error('secret internal detail at /srv/app.ts:12:3');
  });
  const server = app.listen(0);
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const r = await makeCall(`http://127.0.0.1:${port}`)('GET', '/boom');
  server.close();
  assertRefused(t, r, 500, 'internal_error', 'EH_INTERNAL_ERROR');
  t.false(r.text.includes('secret internal detail'));
  t.true(r.json.message.includes(r.headers.get('x-request-id')!));
});
