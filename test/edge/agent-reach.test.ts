/**
 * An environment's reach fails closed. The share's target is an address inside a private network (a namespace), and
 * a decoy listens on that same address in the edge's own network. Once the environment has had an agent, the edge
 * never connects to the target itself: with the last agent revoked it answers 502 at once, and keeps answering 502
 * through every path that reloads what it knows (notifications of each table it reads, a lost change feed and its
 * full resync, the periodic resync, set to run every 300 ms here instead of every minute). Only an explicit PATCH of
 * the reach sends it to the address in its own network again, and that change is an execution.
 */
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { enrollAgent, newEnvironment, runAgent, startPrivateTarget, type RunningAgent } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { assertRefused } from '../helpers/refusals.js';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '3000', HUB_EDGE_FLUSH_MS: '600000', HUB_EDGE_RESYNC_MS: '300' } });
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
  // removed once the edge has stopped, so that its connections into them could end
  for (const n of namespaces) await n.remove().catch(() => undefined);
});
const cleanups: (() => Promise<unknown>)[] = [];
const namespaces: PrivateNetwork[] = [];
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'reach-'));
let edge: Edge;
let hub: HubFixture;
let ns: PrivateNetwork;
let decoy: http.Server;
let decoyHits = 0;
let port: number;

test.before(async () => {
  // the decoy: what answers at the target's address in the edge's network
  decoy = http.createServer((_req, res) => {
    decoyHits++;
    res.end('decoy');
  });
  await new Promise<void>((resolve) => decoy.listen(0, '127.0.0.1', resolve));
  port = (decoy.address() as AddressInfo).port;
  cleanups.push(() => new Promise((resolve) => decoy.close(resolve)));
  edge = await startTestEdge({ host: '0.0.0.0' });
  hub = await stack.hub();
  ns = await privateNetwork();
  namespaces.push(ns);
  // the private target on the same address and port inside the namespace
  await startPrivateTarget(ns, 'private', { http: port, tcp: port + 1 > 65535 ? port - 1 : port + 1 });
  await publicFrontendCertificate(stack.databaseUrl);
});

const get = (host: string) => edgeRequest(edge.httpPort!, host, { path: '/whoami' });

/** Every path by which the edge reloads routes, agents and environments, forced now; resolves once applied. */
async function forceReloads(envZId: string, zId: string): Promise<void> {
  const notify = (change: Record<string, unknown>) =>
    stack.sql.query(`SELECT pg_notify('edgehub_edge', $1)`, [JSON.stringify({ op: 'UPDATE', hubId: hub.hubId, ...change })]);
  await notify({ table: 'agents', id: 'none' });
  await notify({ table: 'environments', id: envZId });
  await notify({ table: 'shares', id: zId });
  await notify({ table: 'frontends', id: 'none' });
  await edge.settled();
  // the change feed lost: on its reconnection the edge reloads everything (notifications may have been missed)
  const before = await stack.sql.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'edgehub-edge-listen'`);
  await stack.sql.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'edgehub-edge-listen'`,
  );
  await waitFor(
    async () => {
      const now = await stack.sql.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'edgehub-edge-listen'`);
      return now.rows.some((r) => !before.rows.some((b) => b.pid === r.pid));
    },
    { what: "the edge's change feed reconnected" },
  );
  // a few periodic resyncs (every 300 ms here)
  await new Promise((resolve) => setTimeout(resolve, 1200));
  await edge.settled();
}

test.serial(
  'reach: a revoked last agent fails closed (502 at once, never the decoy), through every reload; only PATCH reach edge opens the direct path',
  async (t) => {
    const envZId = await newEnvironment(hub);
    t.is((await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.reach, 'edge', 'a new environment is reached by the edge');
    const target = `http://127.0.0.1:${port}`;
    const { host, zId } = await routedShare(edge, hub, { target, envZId });
    // reach edge: the edge connects itself, and in its network the decoy answers
    t.is((await get(host)).text, 'decoy');
    const hitsBefore = decoyHits;

    const { dir, id } = await enrollAgent(hub, envZId, work);
    t.is((await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.reach, 'agent', 'the first enrollment sets reach agent');
    const agent: RunningAgent = runAgent(ns, dir, [edge.httpsPort!]);
    cleanups.push(() => agent.stop('SIGKILL'));
    await agent.printed(/connected to edge/);
    await waitFor(async () => (await get(host)).text === 'private', { what: 'the private target through the agent' });

    t.is((await hub.call('DELETE', `${hub.h}/environments/${envZId}/agents/${id}`)).status, 204);
    await agent.printed(/disconnected from edge/, 5000);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 0, { what: 'no agent on the gateway' });
    const started = Date.now();
    const revoked = await get(host);
    assertRefused(t, revoked, 502, 'bad_gateway', 'EH_NO_AGENT', envZId); // names the environment
    t.true(Date.now() - started < 1000, 'answered at once');
    const env = await hub.call('GET', `${hub.h}/environments/${envZId}`);
    t.is(env.json.reach, 'agent', 'revoking the last agent leaves reach agent');
    t.deepEqual(env.json.agents, []);

    await forceReloads(envZId, zId);
    const later = await get(host);
    t.is(later.status, 502, `after the reloads: ${later.status} ${later.text}`);
    t.is(decoyHits, hitsBefore, 'the decoy in the edge network was never asked while reach was agent');

    // bad input: 400 naming the field, nothing changed, nothing recorded
    const bad = await hub.call('PATCH', `${hub.h}/environments/${envZId}`, { body: { reach: 'sometimes' } });
    assertRefused(t, bad, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.reach');
    t.is((await hub.call('PATCH', `${hub.h}/environments/${envZId}`, { body: { reach: 'edge', mtls: true } })).status, 400);
    t.is((await hub.call('PATCH', `${hub.h}/environments/nope`, { body: { reach: 'edge' } })).status, 404);
    const other = await stack.hub();
    t.is((await other.call('PATCH', `${other.h}/environments/${envZId}`, { body: { reach: 'edge' } })).status, 404, "another hub's key");
    t.is((await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.reach, 'agent');
    t.is((await get(host)).status, 502);

    // the explicit change: the edge reaches the address in its own network again, and the change is an execution
    const patched = await hub.call('PATCH', `${hub.h}/environments/${envZId}`, { body: { reach: 'edge' } });
    t.is(patched.status, 200, patched.text);
    t.is(patched.json.reach, 'edge');
    t.is(patched.json.envZId, envZId);
    await waitFor(async () => (await get(host)).text === 'decoy', { timeoutMs: 2000, what: 'the edge connecting itself after PATCH reach edge' });
    const executions = await hub.call('GET', `${hub.h}/executions?size=50`);
    const recorded = executions.json.content.find((e: { type: string; resourceId: string }) => e.type === 'environments.setReach' && e.resourceId === envZId);
    t.like(recorded, { status: 'SUCCEEDED', resourceType: 'environment', result: { from: 'agent', to: 'edge' } });
  },
);

test.serial('reach on create and in every answer; a bad value is a 400 naming the field', async (t) => {
  const created = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'closed from the start', reach: 'agent' } });
  t.is(created.status, 201);
  t.is(created.json.reach, 'agent');
  const listed = await hub.call('GET', `${hub.h}/environments?size=100`);
  t.true(listed.json.content.every((e: { reach: string }) => e.reach === 'agent' || e.reach === 'edge'));
  t.is(listed.json.content.find((e: { envZId: string }) => e.envZId === created.json.envZId).reach, 'agent');
  // an agent-reach environment with no agent ever: 502, never the decoy
  const hits = decoyHits;
  const { host } = await routedShare(edge, hub, { target: `http://127.0.0.1:${port}`, envZId: created.json.envZId });
  const r = await get(host);
  assertRefused(t, r, 502, 'bad_gateway', 'EH_NO_AGENT');
  t.is(decoyHits, hits);
  const bad = await hub.call('POST', `${hub.h}/environments`, { body: { reach: 'AGENT' } });
  assertRefused(t, bad, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.reach');
  const description = await hub.call('PATCH', `${hub.h}/environments/${created.json.envZId}`, { body: { description: 'renamed' } });
  t.is(description.status, 200);
  t.like(description.json, { description: 'renamed', reach: 'agent' });
});
