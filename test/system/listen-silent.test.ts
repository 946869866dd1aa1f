/**
 * A change-notification connection that goes silent without closing (its PostgreSQL backend stopped with SIGSTOP:
 * the socket stays open, nothing answers, as with a hung peer or a path that drops packets). TCP alone would notice
 * after hours, and until then no revocation would be heard. Each process checks its LISTEN connection every
 * HUB_DB_LISTEN_PING_MS and makes it again when it does not answer: a share deleted, or an API key revoked by another
 * process, stops working within seconds.
 */
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { edgeRequest, publicFrontendId, startBackend, type Backend } from '../helpers/edge.js';
import { spawnScript, type Spawned } from '../helpers/processes.js';
import { useStack, waitFor } from '../helpers/stack.js';

const PING_MS = 1000;
const stack = useStack(test, { env: { HUB_DB_LISTEN_PING_MS: String(PING_MS) } });
const stopped = new Set<number>();
let backend: Backend;
let edge: Spawned | undefined;
stack.onStop(async () => {
  for (const pid of stopped) process.kill(pid, 'SIGCONT');
  await edge?.kill();
  await backend?.close();
});
test.before(async () => {
  backend = await startBackend((_req, res) => res.end('from the backend'));
});

/** The PostgreSQL backend of the LISTEN connection of the process named `role`, stopped until the file ends. */
async function silence(role: string): Promise<number> {
  const pid = await waitFor(
    async () => {
      const { rows } = await stack.sql.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [
        `edgehub-${role}-listen`,
      ]);
      return rows.length === 1 && rows[0].pid;
    },
    { what: `the LISTEN connection of ${role}` },
  );
  process.kill(pid, 'SIGSTOP');
  stopped.add(pid);
  return pid;
}

test.serial('the edge: a share deleted while its LISTEN connection is silent stops being routed within seconds', async (t) => {
  const port = await freePort();
  edge = spawnScript('edge/index.ts', { HUB_PROCESS: 'edge', HUB_EDGE_HTTP_PORT: String(port), HUB_EDGE_HTTPS_PORT: '0' });
  const hub = await stack.hub();
  const created = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'silent', frontendIds: [await publicFrontendId(hub)], target: backend.url } });
  t.is(created.status, 201, created.text);
  const host = new URL(created.json.frontendEndpoint).hostname;
  await waitFor(async () => (await edgeRequest(port, host).catch(() => ({ status: 0 }))).status === 200, { what: 'the share routed' });

  await silence('edge');
  t.is((await hub.call('DELETE', `${hub.h}/shares/${created.json.zId}`)).status, 204);
  const deletedAt = Date.now();
  await waitFor(async () => (await edgeRequest(port, host)).status === 404, {
    timeoutMs: 5 * PING_MS + 5000,
    intervalMs: 100,
    what: 'the deleted share no longer routed',
  });
  t.true(Date.now() - deletedAt < 5 * PING_MS + 5000);
  await edge.waitForLine(/stopped answering; reconnecting/, 'the edge saying why it reconnected', 1000);
});

test.serial("the API: a key revoked by another process while this one's LISTEN connection is silent is refused within seconds", async (t) => {
  const hub = await stack.hub();
  t.is((await hub.call('GET', `${hub.h}/shares`)).status, 200, 'the key works (and is cached)');
  await silence('app');
  // another process revokes it: only the notification can tell this one
  await stack.sql.query('DELETE FROM api_keys WHERE id = $1', [hub.keyId]);
  await waitFor(async () => (await hub.call('GET', `${hub.h}/shares`)).status === 401, {
    timeoutMs: 5 * PING_MS + 5000,
    intervalMs: 100,
    what: 'the revoked key refused',
  });
  t.pass();
});
