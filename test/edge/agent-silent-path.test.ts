/**
 * A path between an agent and the edge that goes silent without closing: a NAT or a firewall that forgets the
 * connection, a cable pulled somewhere between. Here the host's side of the namespace's veth goes down, so every
 * packet is lost and nobody sends a reset. The edge notices by its own PINGs; the agent must notice too (TCP alone
 * would take many minutes, and the agent would sit on a dead connection meanwhile): it PINGs the edge, gives the
 * connection up when a PING goes unanswered, and dials again until the path is back.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { enrollAgent, newEnvironment, runAgent, startPrivateTarget, type RunningAgent } from '../helpers/agents.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const PING_MS = 500;
const stack = useStack(test);
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
});
let edge: Edge;
let hub: HubFixture;
let ns: PrivateNetwork;
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agents-'));
const cleanups: (() => Promise<unknown>)[] = [];

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0' });
  hub = await stack.hub();
  ns = await privateNetwork();
  cleanups.push(() => ns.remove());
  await startPrivateTarget(ns, 'A');
  await publicFrontendCertificate(stack.databaseUrl);
});

test.serial('a silent path: the agent gives the connection up within two PING intervals, and serves again once the path is back', async (t) => {
  const envZId = await newEnvironment(hub);
  const { host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId });
  const { dir } = await enrollAgent(hub, envZId, work);
  process.env.EDGEHUB_AGENT_PING_MS = String(PING_MS);
  let agent: RunningAgent;
  try {
    agent = runAgent(ns, dir, [edge.httpsPort!]);
  } finally {
    delete process.env.EDGEHUB_AGENT_PING_MS;
  }
  cleanups.push(() => agent.stop('SIGKILL'));
  await agent.printed(/connected to edge/);
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text, 'A');

  await ns.link(false);
  const cut = Date.now();
  try {
    const line = await agent.printed(/disconnected from edge/, 10_000);
    t.regex(line, /no answer from the edge within 0\.5 s/);
    // while the path is still down: noticed by the agent itself, not by a reset when it comes back
    t.true(Date.now() - cut < 3 * PING_MS + 2000, `noticed after ${Date.now() - cut} ms`);
  } finally {
    await ns.link(true);
  }
  // dialled again (backoff at most 5 s): the share is served through it again
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text === 'A', { timeoutMs: 20_000, intervalMs: 250, what: 'the share served through the agent again' });
  t.is(agent.lines.filter((l) => /^connected to edge/.test(l)).length, 2, agent.lines.join('\n'));
});
