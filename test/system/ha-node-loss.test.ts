import { chmodSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { type HaStores, startHaStores } from '../../scripts/services/haStores.js';
import { nodeEnv, startNode } from '../../scripts/start-ha.js';
import { startHttpTarget, type HttpTarget } from '../helpers/httpTarget.js';
import { scriptArgs } from '../helpers/script.js';
import { makeCall, waitFor } from '../helpers/stack.js';

/**
 * A whole node lost: two nodes (each `npm start` running web, worker, clock and edge) against PostgreSQL with a
 * synchronous standby and Redis with sentinels, as `npm run start:ha` runs them. Every process of node 1 is SIGKILLed
 * (its process group) while node 2's edge carries requests to a share and provisioning jobs are running: node 2's edge
 * fails no request, and every job is finished (node 1's by node 2's worker once their locks expire): no execution is
 * left unfinished.
 */

const adminToken = 'ha-node-loss-admin-token-0123456789';
let stores: HaStores;
let target: HttpTarget;
const nodes: { pid: number; port: number; edge: number; exited: Promise<unknown> }[] = [];
const lines: string[] = [];

test.before(async () => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'ha-'));
  chmodSync(dir, 0o755);
  stores = await startHaStores(path.join(dir, 'stores'));
  target = await startHttpTarget();
  for (let i = 0; i < 2; i++) {
    const [port, edge, edgeTls, tcp] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const child = startNode(
      `node-${i + 1}`,
      {
        ...nodeEnv(stores.env, {
          dataDir: path.join(dir, `node-${i + 1}`),
          adminToken,
          secretKeyHex: '11'.repeat(32),
          port,
          edgeHttp: edge,
          edgeHttps: edgeTls,
          tcpFrom: tcp,
          tcpTo: tcp,
        }),
        HUB_IPSEC_PROVIDER: 'simulated',
        HUB_PROVISION_DELAY_MS: '1500',
        LOG_LEVEL: 'warn',
        // the defaults of a job's lock and the stalled check: what a node's death costs in production
        HUB_JOB_LOCK_MS: '',
        HUB_STALLED_INTERVAL_MS: '',
      },
      (line) => lines.push(line),
      scriptArgs('scripts/start.ts'),
    );
    nodes.push({ pid: child.pid!, port, edge, exited: new Promise((r) => child.once('exit', r)) });
    // the first node migrates the database before the second starts against it
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200, {
      timeoutMs: 240_000,
      intervalMs: 500,
      what: `node ${i + 1} answering /healthz (${lines.slice(-5).join(' | ')})`,
    });
  }
});

test.after.always(async () => {
  for (const n of nodes) {
    try {
      process.kill(-n.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  await Promise.all(nodes.map((n) => n.exited));
  await target?.close();
  await stores?.stop();
});

/** GET through an edge with the share's Host: the status, or 0 when the connection failed. */
function viaEdge(edgePort: number, host: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: edgePort, path: '/', headers: { host }, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

test.serial('node 1 SIGKILLed under load: node 2 serves every request and finishes every job', async (t) => {
  t.timeout(5 * 60_000);
  const [one, two] = nodes;
  const admin = makeCall(`http://127.0.0.1:${one.port}`, `Bearer ${adminToken}`);
  const hub = await admin('POST', '/admin/v1/hubs', { body: { name: 'ha', features: { ipsec: true } }, contract: false });
  t.is(hub.status, 201, hub.text);
  const key = await admin('POST', `/admin/v1/hubs/${hub.json.id}/api-keys`, { body: { name: 'ha' }, contract: false });
  const onTwo = makeCall(`http://127.0.0.1:${two.port}`, `Bearer ${key.json.token}`);
  const h = `/hub/${hub.json.id}`;
  const frontends = await onTwo('GET', `${h}/frontends`, { contract: false });
  const publicId = frontends.json.find((f: { publicName: string }) => f.publicName === 'public').id;
  const share = await onTwo('POST', `${h}/shares`, { body: { name: 'direct', frontendIds: [publicId], target: target.url }, contract: false });
  t.is(share.status, 201, share.text);
  const host = new URL(share.json.frontendEndpoint).hostname;
  await waitFor(async () => (await viaEdge(two.edge, host)) === 200, { what: "node 2's edge serving the share" });

  // jobs in flight on both workers: provisioning takes a few seconds per tunnel
  const tunnels: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await onTwo('POST', `/hub/v2/${hub.json.id}/ipsec-tunnels`, {
      body: { name: `t${i}`, locationId: `site-${i}`, peerPublicIp: `203.0.113.${10 + i}`, peerCidr: `10.${60 + i}.0.0/16` },
      contract: false,
    });
    t.is(r.status, 202, r.text);
    tunnels.push(r.json.id);
  }

  // steady requests to node 2's edge while node 1 dies
  const statuses = new Map<number, number>();
  let loading = true;
  const load = (async () => {
    while (loading) {
      const s = await viaEdge(two.edge, host);
      statuses.set(s, (statuses.get(s) ?? 0) + 1);
    }
  })();
  await new Promise((r) => setTimeout(r, 1500));
  process.kill(-one.pid, 'SIGKILL');
  await one.exited;
  await new Promise((r) => setTimeout(r, 3000));
  loading = false;
  await load;
  t.log(`node 2's edge during node 1's death: ${JSON.stringify([...statuses])}`);
  t.deepEqual([...statuses.keys()], [200], 'every request through node 2 answered 200');

  // every job ends: node 1's are taken over by node 2's worker once their locks expire
  const states = async () =>
    Promise.all(tunnels.map(async (id) => (await onTwo('GET', `/hub/v2/${hub.json.id}/ipsec-tunnels/${id}`, { contract: false })).json.status as string));
  const final = await waitFor(
    async () => {
      const s = await states();
      return s.every((x) => x === 'DEPLOYED' || x === 'ERROR') ? s : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1000, what: 'every tunnel provisioned' },
  );
  t.deepEqual(
    final,
    tunnels.map(() => 'DEPLOYED'),
  );
  // and every other execution too (the clock's, such as the hub CA's first CRL, may have been running on node 1 and
  // is taken over like the rest: within the lock and stalled-check interval, not at once when the tunnels are done)
  type Execution = { id: string; type: string; status: string };
  const unfinished = async () =>
    ((await onTwo('GET', `${h}/executions?size=100`, { contract: false })).json.content as Execution[]).filter(
      (e) => e.status === 'QUEUED' || e.status === 'RUNNING',
    );
  let left: Execution[] = [];
  await waitFor(async () => (left = await unfinished()).length === 0, { timeoutMs: 60_000, intervalMs: 1000, what: 'every execution finished' }).catch(
    () => undefined,
  );
  t.is(left.length, 0, JSON.stringify(left));
  const failed = ((await onTwo('GET', `${h}/executions?size=100`, { contract: false })).json.content as Execution[]).filter((e) => e.status !== 'SUCCEEDED');
  t.deepEqual(failed, [], 'every execution succeeded');
});
