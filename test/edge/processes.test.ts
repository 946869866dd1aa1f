import { spawn, type ChildProcess } from 'node:child_process';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { edgeRequest, publicFrontendId, startBackend, type Backend } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { scriptArgs } from '../helpers/script.js';

const stack = useStack(test);
stack.onStop(async () => {
  await backend?.close();
});
let backend: Backend;
let hub: HubFixture;

interface EdgeProcess {
  port: number;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** `node edge/index.ts` as the Procfile runs it, against the test database. */
async function spawnEdge(env: Record<string, string> = {}): Promise<EdgeProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, scriptArgs('edge/index.ts'), {
    env: { ...process.env, HUB_PROCESS: 'edge', HUB_EDGE_HTTP_PORT: String(port), HUB_EDGE_HTTPS_PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    // a process start (compiled code, the database, Redis) takes seconds on a busy machine
    await waitFor(async () => (await edgeRequest(port, 'probe.invalid').catch(() => ({ status: 0 }))).status === 404, {
      timeoutMs: 60_000,
      what: `edge on ${port}`,
    });
  } catch (err) {
    // a process that never answered is not left behind
    child.kill('SIGKILL');
    await exited;
    throw err;
  }
  return { port, child, exited };
}

test.before(async () => {
  backend = await startBackend((_req, res) => res.end('from the backend'));
  hub = await stack.hub();
});

async function createShare(): Promise<{ zId: string; host: string }> {
  const created = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'multi', frontendIds: [await publicFrontendId(hub)], target: backend.url } });
  return { zId: created.json.zId, host: new URL(created.json.frontendEndpoint).hostname };
}

test('two edge processes both learn of a new share and of its deletion, without a restart', async (t) => {
  const edges = [await spawnEdge(), await spawnEdge()];
  try {
    const { zId, host } = await createShare();
    for (const e of edges) {
      const r = await waitFor(
        async () => {
          const answer = await edgeRequest(e.port, host);
          return answer.status === 200 && answer;
        },
        { what: `edge ${e.port} routing the share` },
      );
      t.is(r.text, 'from the backend');
    }
    t.is((await hub.call('DELETE', `${hub.h}/shares/${zId}`)).status, 204);
    for (const e of edges) {
      await waitFor(async () => (await edgeRequest(e.port, host)).status === 404, {
        timeoutMs: 2000,
        intervalMs: 20,
        what: `edge ${e.port} forgetting the share`,
      });
    }
    t.pass();
  } finally {
    for (const e of edges) e.child.kill('SIGTERM');
    await Promise.all(edges.map((e) => e.exited));
  }
});

test('SIGTERM flushes the counters: bytes carried since the last flush reach the share metrics', async (t) => {
  const e = await spawnEdge({ HUB_EDGE_FLUSH_MS: '3600000' });
  const { zId, host } = await createShare();
  await waitFor(async () => (await edgeRequest(e.port, host)).status === 200, { what: 'the share routed' });
  const r = await edgeRequest(e.port, host, { method: 'POST', body: 'x'.repeat(4096) });
  t.is(r.status, 200);
  e.child.kill('SIGTERM');
  t.is(await e.exited, 0, 'a clean exit');
  const metrics = await hub.call('GET', `${hub.h}/shares/${zId}/metrics?range=PT1H`);
  const rx = metrics.json.samples.reduce((n: number, p: { rx: number }) => n + p.rx, 0);
  const tx = metrics.json.samples.reduce((n: number, p: { tx: number }) => n + p.tx, 0);
  t.true(rx > 4096, `rx ${rx}`);
  t.true(tx > 'from the backend'.length * 2, `tx ${tx}`);
});
