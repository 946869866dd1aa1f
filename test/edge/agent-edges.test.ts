/**
 * Every edge, found by the agent. The agent is given one edge (`--edge`); a second and a third edge process started
 * after it publish their agent addresses (HUB_EDGE_AGENT_ADDRESSES, the host's side of the namespace's veth) in the
 * database, the edge the agent is connected to tells it the live set, and the agent connects to each within 10 s: the
 * agent-served share answers on all three. An edge that dies (SIGKILL, nothing cleaned up) stops counting once its
 * liveness expires, and the agent stops dialling it; one stopped gracefully is dropped at once. The edge it was given
 * stays dialled whatever the live set says.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { freePort } from '../../scripts/services/index.js';
import { enrollAgent, newEnvironment, runAgent, startPrivateTarget } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { scriptArgs } from '../helpers/script.js';

// edges renew their liveness every second (expiry after 3 s) instead of every 5 s (15 s)
const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '3000', HUB_EDGE_FLUSH_MS: '600000', HUB_EDGE_HEARTBEAT_MS: '1000' } });
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
  // removed once the edge has stopped, so that its connections into them could end
  for (const n of namespaces) await n.remove().catch(() => undefined);
});
const cleanups: (() => Promise<unknown>)[] = [];
const namespaces: PrivateNetwork[] = [];
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'edges-'));
let edge: Edge;
let hub: HubFixture;
let ns: PrivateNetwork;

test.before(async () => {
  ns = await privateNetwork();
  namespaces.push(ns);
  hub = await stack.hub();
  await startPrivateTarget(ns, 'A');
  await publicFrontendCertificate(stack.databaseUrl);
});

/** An edge process whose agent address is the host's side of the veth at its own TLS port. */
async function edgeProcess() {
  const [httpPort, httpsPort] = await Promise.all([freePort(), freePort()]);
  const child = spawn(process.execPath, scriptArgs('edge/index.ts'), {
    env: {
      ...process.env,
      HUB_PROCESS: 'edge',
      HUB_EDGE_HTTP_PORT: String(httpPort),
      HUB_EDGE_HTTPS_PORT: String(httpsPort),
      HUB_EDGE_AGENT_ADDRESSES: `${ns.hostIp}:${httpsPort}`,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  await waitFor(async () => (await edgeRequest(httpPort, 'probe.invalid').catch(() => ({ status: 0 }))).status === 404, { what: 'the edge process listening' });
  return { child, exited, httpPort, address: `${ns.hostIp}:${httpsPort}` };
}

test.serial('an agent given one edge connects to every live edge within 10 s, serves on each, and stops dialling edges that left', async (t) => {
  // the in-process edge publishes the address the namespace reaches it at
  const httpsPort = await freePort();
  const address = `${ns.hostIp}:${httpsPort}`;
  edge = await startTestEdge({ host: '0.0.0.0', httpsPort, agentAddresses: [address] });
  const envZId = await newEnvironment(hub);
  const { host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId });
  const { dir } = await enrollAgent(hub, envZId, work);
  const agent = runAgent(ns, dir, [edge.httpsPort!]);
  cleanups.push(() => agent.stop('SIGKILL'));
  await agent.printed(new RegExp(`connected to edge ${address.replace(/\./g, '\\.')}`));
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text, 'A');

  // a second and a third edge, started after the agent
  const second = await edgeProcess();
  await agent.printed(new RegExp(`connected to edge ${second.address.replace(/\./g, '\\.')}`), 10_000);
  const third = await edgeProcess();
  await agent.printed(new RegExp(`connected to edge ${third.address.replace(/\./g, '\\.')}`), 10_000);
  for (const port of [edge.httpPort!, second.httpPort, third.httpPort]) {
    await waitFor(async () => (await edgeRequest(port, host, { path: '/whoami' })).text === 'A', {
      timeoutMs: 5000,
      what: `the share answering on the edge at :${port}`,
    });
  }
  t.false(
    agent.lines.some((l) => new RegExp(`found edge ${address.replace(/\./g, '\\.')}`).test(l)),
    'the given edge is not dialled twice',
  );

  // the third edge dies without cleaning up: once its liveness expires (3 s here) the agent stops dialling it
  third.child.kill('SIGKILL');
  await third.exited;
  await agent.printed(new RegExp(`stopped dialling edge ${third.address.replace(/\./g, '\\.')} \\(no longer live\\)`), 40_000);
  const after = agent.lines.length;
  await new Promise((resolve) => setTimeout(resolve, 6000)); // longer than the agent's longest backoff (5 s)
  t.false(
    agent.lines.slice(after).some((l) => l.includes(third.address)),
    `no dial of the dead edge after it left: ${agent.lines.slice(after).join(' | ')}`,
  );

  // the second stops gracefully: its row goes at once, and so does the agent's link
  second.child.kill('SIGTERM');
  await second.exited;
  await agent.printed(new RegExp(`stopped dialling edge ${second.address.replace(/\./g, '\\.')} \\(no longer live\\)`), 10_000);
  // the edge it was given is still served
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text, 'A');
});
