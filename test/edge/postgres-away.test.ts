import { spawn } from 'node:child_process';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { edgeRequest, publicFrontendId, startBackend, type Backend } from '../helpers/edge.js';
import { stopDatabase } from '../helpers/outage.js';
import { scriptArgs } from '../helpers/script.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

/**
 * The data plane does not stop with the control plane's database: while PostgreSQL is away (its connections cut, new
 * ones refused) an edge process keeps serving the routes it has, keeps the bytes it carries for the usage it cannot
 * write yet, and once the database is back it hears of changes again (the ones made after, and a full reload for any
 * it may have missed) and writes that usage.
 */

const stack = useStack(test);
let backend: Backend;
let hub: HubFixture;
test.before(async () => {
  backend = await startBackend((_req, res) => res.end('from the backend'));
  hub = await stack.hub();
});
stack.onStop(async () => {
  await backend?.close();
});

async function createShare(name: string): Promise<{ zId: string; host: string }> {
  const created = await hub.call('POST', `${hub.h}/shares`, { body: { name, frontendIds: [await publicFrontendId(hub)], target: backend.url } });
  if (created.status !== 201) throw new Error(`share: ${created.status} ${created.text}`);
  return { zId: created.json.zId, host: new URL(created.json.frontendEndpoint).hostname };
}

const rxOf = async (zId: string) => {
  const metrics = await hub.call('GET', `${hub.h}/shares/${zId}/metrics?range=PT1H`);
  return metrics.json.samples.reduce((n: number, p: { rx: number }) => n + p.rx, 0) as number;
};

test.serial('PostgreSQL away: the edge serves the routes it has, keeps the usage, and follows changes again once it is back', async (t) => {
  const port = await freePort();
  const child = spawn(process.execPath, scriptArgs('edge/index.ts'), {
    env: { ...process.env, HUB_PROCESS: 'edge', HUB_EDGE_HTTP_PORT: String(port), HUB_EDGE_HTTPS_PORT: '0', HUB_EDGE_FLUSH_MS: '200', LOG_LEVEL: 'error' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  try {
    await waitFor(async () => (await edgeRequest(port, 'probe.invalid').catch(() => ({ status: 0 }))).status === 404, {
      timeoutMs: 60_000,
      what: 'the edge listening',
    });
    const kept = await createShare('kept');
    await waitFor(async () => (await edgeRequest(port, kept.host)).status === 200, { what: 'the share routed' });
    const before = await waitFor(async () => (await rxOf(kept.zId)) || undefined, { what: 'the first usage written' });

    const outage = await stopDatabase(stack.databaseUrl);
    const body = 'x'.repeat(10_000);
    try {
      // for longer than the edge's reconnection backoff and several usage flushes, and at least 20 requests (however
      // slow the machine): every request is served
      const until = Date.now() + 3000;
      for (let served = 0; served < 20 || Date.now() < until; served++) {
        const r = await edgeRequest(port, kept.host, { method: 'POST', body });
        t.is(r.status, 200, r.text);
        t.is(r.text, 'from the backend');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      t.is(exitCode, undefined, 'the edge is still running');
    } finally {
      await outage.end();
    }

    // back: the usage of the outage is written (nothing dropped), and changes reach the edge again
    await waitFor(async () => (await rxOf(kept.zId)) >= before + 20 * body.length, { timeoutMs: 15_000, what: 'the usage carried during the outage written' });
    const added = await createShare('added-after');
    await waitFor(async () => (await edgeRequest(port, added.host)).status === 200, { timeoutMs: 15_000, what: 'a share made after the outage routed' });
    t.is((await hub.call('DELETE', `${hub.h}/shares/${kept.zId}`)).status, 204);
    await waitFor(async () => (await edgeRequest(port, kept.host)).status === 404, { timeoutMs: 15_000, what: 'a deleted share forgotten' });
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  t.is(exitCode, 0, 'a clean exit');
});
