/**
 * Request inspection across edge processes: two `edge/index.ts` processes record into the one store, so requests
 * through either appear in one list, in the order they happened, within a second; a replay is carried out by
 * whichever edge takes it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { edgeRequest, publicFrontendId, startBackend, type Backend } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { scriptArgs } from '../helpers/script.js';

const stack = useStack(test);
let backend: Backend;
let hub: HubFixture;
const edges: { port: number; child: ChildProcess; exited: Promise<unknown> }[] = [];
stack.onStop(async () => {
  for (const e of edges) e.child.kill('SIGTERM');
  await Promise.all(edges.map((e) => e.exited));
  await backend?.close();
});

async function spawnEdge(): Promise<{ port: number; child: ChildProcess; exited: Promise<unknown> }> {
  const port = await freePort();
  const child = spawn(process.execPath, scriptArgs('edge/index.ts'), {
    env: { ...process.env, HUB_PROCESS: 'edge', HUB_EDGE_HTTP_PORT: String(port), HUB_EDGE_HTTPS_PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitFor(async () => (await edgeRequest(port, 'probe.invalid').catch(() => ({ status: 0 }))).status === 404, { what: `edge on ${port}` });
  return { port, child, exited };
}

test.before(async () => {
  backend = await startBackend((req, res) => res.end(`seen ${req.url}`));
  hub = await stack.hub();
  edges.push(...(await Promise.all([spawnEdge(), spawnEdge()])));
});

test.serial('requests through either of two edge processes appear in one list, in order, within 1 s; a replay goes through one of them', async (t) => {
  const created = await hub.call('POST', `${hub.h}/shares`, {
    body: { name: 'two-edges', frontendIds: [await publicFrontendId(hub)], target: backend.url, inspect: true },
  });
  t.is(created.status, 201);
  const zId = created.json.zId;
  const host = new URL(created.json.frontendEndpoint).hostname;
  for (const e of edges) await waitFor(async () => (await edgeRequest(e.port, host)).status === 200, { what: `edge ${e.port} routing the share` });
  // the warm-up requests above are recorded too: the ten below are the newest
  const paths = Array.from({ length: 10 }, (_, i) => `/step/${i}`);
  for (const [i, p] of paths.entries()) t.is((await edgeRequest(edges[i % 2].port, host, { path: p })).text, `seen ${p}`);
  const list = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${zId}/requests`);
      return r.json.length >= paths.length + 2 && r.json;
    },
    { timeoutMs: 1000, intervalMs: 20, what: 'every exchange listed within 1 s' },
  );
  t.deepEqual(
    list.slice(0, paths.length).map((e: { path: string }) => e.path),
    [...paths].reverse(),
    'newest first, in the order they happened',
  );
  const carriers = new Set(list.map((e: { edge: string }) => e.edge));
  t.is(carriers.size, 2, 'both edges named');

  const replay = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${list[0].id}/replay`);
  t.is(replay.status, 201, replay.text);
  t.is(replay.json.replayOf, list[0].id);
  t.is(replay.json.status, 200);
  t.true(carriers.has(replay.json.edge));
  const detail = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${replay.json.id}`);
  t.is(Buffer.from(detail.json.response.body, 'base64').toString(), 'seen /step/9');
});
