/**
 * `client-ip` affinity behind a trusted proxy: the edge trusts 127.0.0.1 (HUB_EDGE_TRUSTED_PROXIES), so a request
 * from there is judged by the client its X-Forwarded-For names, as the share policy judges it, and lands on the agent
 * that address hashes to; from a peer that is not trusted, X-Forwarded-For is ignored and the peer's address counts.
 * Two real agents in two private networks (test/helpers/netns.ts), each with its own copy of the target answering
 * its own name, show which agent carried a request.
 */
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { byClient } from '../../edge/agents/affinity.js';
import type { Edge } from '../../edge/server.js';
import { enrollAgent, newEnvironment, runAgent, startPrivateTarget, type RunningAgent } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000', HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  for (const a of agents) await a.stop('SIGKILL').catch(() => undefined);
  await edge?.stop(1000);
  for (const ns of networks) await ns.remove();
});
let edge: Edge;
let hub: HubFixture;
let networks: PrivateNetwork[] = [];
const agents: RunningAgent[] = [];
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-affinity-'));
const NAMES = ['A', 'B'];

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0', trustedProxies: ['127.0.0.1/32'] });
  hub = await stack.hub();
  networks = await Promise.all(NAMES.map(() => privateNetwork()));
  await Promise.all(networks.map((ns, i) => startPrivateTarget(ns, NAMES[i])));
  await publicFrontendCertificate(stack.databaseUrl);
});

/** One request to the edge's HTTP port at `address` (its peer address is then that one, as this host's). */
function requestAt(address: string, host: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: address, port: edge.httpPort, path: '/whoami', headers: { host, ...headers }, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

test.serial("client-ip affinity behind a trusted proxy: requests land on agents by their X-Forwarded-For address, not the proxy's", async (t) => {
  const envZId = await newEnvironment(hub);
  const { host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId, affinity: 'client-ip' });
  const ids = [await enrollAgent(hub, envZId, work), await enrollAgent(hub, envZId, work)];
  agents.push(...ids.map((id, i) => runAgent(networks[i], id.dir, [edge.httpsPort!])));
  await Promise.all(agents.map((a) => a.printed(/connected to edge/)));
  await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'two agents on the gateway' });
  // which agent an address hashes to (both agents have the same weight)
  const members = ids.map((id, i) => ({ weight: 1, agent: { id: id.id }, name: NAMES[i] }));
  const expected = (address: string) => byClient(members, address).name;

  const clients = Array.from({ length: 16 }, (_, i) => `198.51.100.${i + 1}`);
  t.deepEqual([...new Set(clients.map(expected))].sort(), NAMES, 'the addresses hash to both agents');
  for (const client of clients) {
    // one trusted proxy (127.0.0.1), different clients; a chain whose right-most hops are trusted proxies counts too
    for (const forwarded of [client, client, `${client}, 127.0.0.1`]) {
      const r = await edgeRequest(edge.httpPort!, host, { path: '/whoami', headers: { 'x-forwarded-for': forwarded } });
      t.is(r.status, 200, r.text);
      t.is(r.text, expected(client), `X-Forwarded-For: ${forwarded}`);
    }
  }
  // without X-Forwarded-For, the proxy is the client
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text, expected('127.0.0.1'));

  // from a peer that is not trusted (this host's address on a veth), X-Forwarded-For counts for nothing
  const untrusted = networks[0].hostIp;
  const answers = await Promise.all(clients.map((client) => requestAt(untrusted, host, { 'x-forwarded-for': client })));
  t.deepEqual([...new Set(answers.map((a) => `${a.status} ${a.text}`))], [`200 ${expected(untrusted)}`]);
});
