/**
 * Replays take the share's own path: through the environment's agent for a private target (in a network namespace
 * the edge cannot reach), and under the egress policy for a direct one (here loopback is denied, so the live
 * request and its replay are both refused with the same 403).
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { enrollAgent, newEnvironment, runAgent, startPrivateTarget, type RunningAgent } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '3000', HUB_EDGE_FLUSH_MS: '600000', HUB_EGRESS_DENY: '127.0.0.0/8' } });
let edge: Edge;
let hub: HubFixture;
let ns: PrivateNetwork;
let agent: RunningAgent | undefined;
let backend: Backend;
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'inspect-agents-'));
stack.onStop(async () => {
  await agent?.stop('SIGKILL');
  await ns?.remove();
  await edge?.stop(1000);
  await backend?.close();
});

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0' });
  hub = await stack.hub();
  ns = await privateNetwork();
  await startPrivateTarget(ns, 'private');
  backend = await startBackend((_req, res) => res.end('never reached'));
  await publicFrontendCertificate(stack.databaseUrl);
});

const list = (zId: string, n: number) =>
  waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${zId}/requests`);
      return r.json.length >= n && r.json;
    },
    { what: `${n} exchanges` },
  );

test.serial('a replay of an agent-served share goes through the agent to the private target', async (t) => {
  const envZId = await newEnvironment(hub);
  const { dir } = await enrollAgent(hub, envZId, work);
  agent = runAgent(ns, dir, [edge.httpsPort!]);
  await agent.printed(/connected to edge/);
  const { zId, host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId, inspect: true });
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text === 'private', { what: 'the share served by the agent' });
  t.is((await edgeRequest(edge.httpPort!, host, { method: 'POST', path: '/echo', body: 'through the agent' })).text, 'through the agent');
  const [echo] = await list(zId, 2);
  t.is(echo.path, '/echo');
  const replay = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${echo.id}/replay`);
  t.is(replay.status, 201, replay.text);
  t.is(replay.json.status, 200);
  const detail = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${replay.json.id}`);
  t.is(Buffer.from(detail.json.response.body, 'base64').toString(), 'through the agent', "the private target's answer, carried by the agent");

  // without its agent the replay gets what a live request gets: 502 naming the environment, recorded
  await agent.stop('SIGTERM');
  agent = undefined;
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).status === 502, { what: 'the agent gone' });
  const offline = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${echo.id}/replay`);
  t.is(offline.status, 201);
  t.is(offline.json.status, 502);
  const why = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${offline.json.id}`);
  t.regex(Buffer.from(why.json.response.body, 'base64').toString(), new RegExp(envZId));
});

test.serial('a replay of a direct share is held to the egress policy like the live request', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const live = await edgeRequest(edge.httpPort!, host, { path: '/denied' });
  t.is(live.status, 403);
  const [recorded] = await list(zId, 1);
  t.is(recorded.status, 403, 'the edge answer is recorded');
  const replay = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${recorded.id}/replay`);
  t.is(replay.status, 201);
  t.is(replay.json.status, 403);
  const detail = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${replay.json.id}`);
  t.is(JSON.parse(Buffer.from(detail.json.response.body, 'base64').toString()).error, 'forbidden');
});
