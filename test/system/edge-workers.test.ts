/**
 * An edge process of its own (the Procfile's `edge`) with HUB_EDGE_WORKERS=2: two workers serve the port; a worker
 * that dies is replaced while the other keeps answering; SIGTERM to the primary stops both workers and the primary
 * exits 0, leaving no process behind.
 */
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { scriptArgs } from '../helpers/script.js';
import { useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { workers: false });

const childrenOf = (pid: number): number[] => {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};

/** The processes that hold the listening socket on `port` (a worker holds it once it listens). */
const listeners = (port: number): number[] => {
  try {
    const out = execFileSync('ss', ['-Hltnp', `sport = :${port}`], { encoding: 'utf8' });
    return [...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
  } catch {
    return [];
  }
};

/** The status the edge answers for a host it does not publish, or 0 when the connection failed. */
const status = (port: number) =>
  new Promise<number>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host: 'nothing.invalid' }, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });

test.serial('HUB_EDGE_WORKERS=2: a dead worker is replaced while the other serves; SIGTERM stops them all and the primary exits 0', async (t) => {
  t.timeout(120_000);
  const port = await freePort();
  const primary = spawn(process.execPath, scriptArgs('edge/index.ts'), {
    env: {
      ...process.env,
      HUB_PROCESS: 'edge',
      HUB_EDGE_WORKERS: '2',
      HUB_EDGE_HTTP_PORT: String(port),
      HUB_EDGE_HTTPS_PORT: '0',
      HUB_EDGE_HOST: '127.0.0.1',
      HUB_METRICS_PORT: '',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  // the log (stdout) and anything said on stderr
  for (const stream of [primary.stdout!, primary.stderr!]) stream.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => primary.once('exit', (code) => resolve(code)));
  stack.onStop(async () => {
    for (const pid of childrenOf(primary.pid!)) process.kill(pid, 'SIGKILL');
    if (primary.exitCode === null) primary.kill('SIGKILL');
    await exited;
  });

  // both workers listening (a worker still starting would leave nobody to answer once the other is killed)
  await waitFor(
    async () => {
      const children = childrenOf(primary.pid!);
      const listening = listeners(port);
      return children.length === 2 && children.every((pid) => listening.includes(pid)) && (await status(port)) === 404;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: `two edge workers listening and answering (${stderr.slice(-300)})` },
  );
  const [first, second] = childrenOf(primary.pid!);
  // a worker's start waits for Redis quietly: no warning that the replay requests cannot be read
  t.notRegex(stderr, /replay requests cannot be read/);

  process.kill(first, 'SIGKILL');
  // the other worker answers meanwhile, and a new one takes the dead one's place
  const seen = new Set<number>();
  await waitFor(
    async () => {
      seen.add(await status(port));
      const now = childrenOf(primary.pid!);
      return now.length === 2 && now.includes(second) && !now.includes(first);
    },
    { timeoutMs: 60_000, intervalMs: 100, what: 'the dead worker replaced' },
  );
  // (a connection the dying worker had just accepted dies with it: only what the other worker answers is counted)
  t.true(seen.has(404), 'the other worker answered while the dead one was replaced');
  const after = await Promise.all(Array.from({ length: 10 }, () => status(port)));
  t.deepEqual(after, Array(10).fill(404), 'both workers answer once it is replaced');
  // the restart is logged (the log reaches the pipe a little later than the new worker exists)
  await waitFor(async () => /edge(\.\d)? \(pid \d+\) exited with signal SIGKILL.*restarting it/.test(stderr), { what: 'the restart logged' });

  const workers = childrenOf(primary.pid!);
  primary.kill('SIGTERM');
  const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 40_000))]);
  t.is(code, 0, `the primary exits 0 after its workers (${stderr.slice(-300)})`);
  for (const pid of workers) t.throws(() => process.kill(pid, 0), undefined, `worker ${pid} is gone`);
});
