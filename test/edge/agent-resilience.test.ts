/**
 * An agent's link to the edge through what goes wrong between them, against real isolation (the agent in a network
 * namespace, its target on the namespace's loopback):
 * - PostgreSQL away: the edge checks agents against what it holds in memory, so a share served through an agent
 *   keeps answering and an agent that starts (or whose connection drops) meanwhile connects and serves; once the
 *   database is back, the API shows that agent connected (the edge's heartbeat writes what it could not write), and
 *   a revocation still closes it out.
 * - A path that goes silent without closing (a NAT or a firewall that forgets the connection, a cable pulled
 *   somewhere between; here the host's side of the namespace's veth goes down, so every packet is lost and nobody
 *   sends a reset). The edge notices by its own PINGs; the agent must notice too (TCP alone would take many minutes,
 *   and the agent would sit on a dead connection meanwhile): it PINGs the edge, gives the connection up when a PING
 *   goes unanswered, and dials again until the path is back.
 */
import test from 'ava';
import { edgeRequest, routedShare } from '../helpers/edge.js';
import { enrollAgent, newEnvironment } from '../helpers/agents.js';
import { useAgentBench } from '../helpers/agentBench.js';
import { stopDatabase } from '../helpers/outage.js';
import { waitFor } from '../helpers/stack.js';

const bench = useAgentBench(test);
const { stack, work } = bench;
/** `edgehub agent run` in the namespace, with the agent's PING interval when given. */
const agentIn = (dir: string, pingMs?: number) => bench.agentIn(dir, pingMs ? { EDGEHUB_AGENT_PING_MS: String(pingMs) } : {});

const connectedInApi = async (envZId: string) => {
  const r = await bench.hub.call('GET', `${bench.hub.h}/environments/${envZId}`);
  return r.status === 200 && r.json.agents.length === 1 && r.json.agents[0].connected === true;
};

test.serial(
  'PostgreSQL away: the share keeps answering through its agent, an agent that starts then serves, and the API shows it connected once the database is back',
  async (t) => {
    const envZId = await newEnvironment(bench.hub);
    const { host } = await routedShare(bench.edge, bench.hub, { target: 'http://127.0.0.1:8080', envZId });
    const { dir, id } = await enrollAgent(bench.hub, envZId, work);
    const first = agentIn(dir);
    await first.printed(/connected to edge/);
    t.is((await edgeRequest(bench.edge.httpPort!, host, { path: '/whoami' })).text, 'A');
    await waitFor(() => connectedInApi(envZId), { what: 'the agent connected in the API' });
    // stopped before the outage: its presence is gone
    await first.stop('SIGKILL');
    await waitFor(async () => !(await connectedInApi(envZId)), { what: 'the stopped agent shown disconnected' });

    const outageStarted = Date.now();
    const outage = await stopDatabase(stack.databaseUrl);
    try {
      t.is((await edgeRequest(bench.edge.httpPort!, host)).status, 502, 'no agent: 502 (the share fails closed)');
      // the agent starts during the outage: the edge takes it from what it holds
      const second = agentIn(dir);
      await second.printed(/connected to edge/);
      await waitFor(async () => (await edgeRequest(bench.edge.httpPort!, host, { path: '/whoami' })).text === 'A', {
        timeoutMs: 5000,
        what: 'the agent serving during the outage',
      });
    } finally {
      await outage.end();
    }
    // its presence could not be written during the outage: the next heartbeat (every 5 s) writes it, with its own time
    await waitFor(() => connectedInApi(envZId), { timeoutMs: 15_000, intervalMs: 250, what: 'the agent shown connected once PostgreSQL is back' });
    const shown = (await bench.hub.call('GET', `${bench.hub.h}/environments/${envZId}`)).json.agents[0];
    t.true(Date.parse(shown.connectedAt) >= outageStarted - 1000, `connectedAt ${shown.connectedAt} is this connection's`);

    // and a revocation after the outage still closes it out
    t.is((await bench.hub.call('DELETE', `${bench.hub.h}/environments/${envZId}/agents/${id}`)).status, 204);
    await waitFor(async () => (await edgeRequest(bench.edge.httpPort!, host)).status === 502, {
      timeoutMs: 5000,
      what: 'the revoked agent no longer carrying the share',
    });
  },
);

const PING_MS = 500;

test.serial('a silent path: the agent gives the connection up within two PING intervals, and serves again once the path is back', async (t) => {
  const envZId = await newEnvironment(bench.hub);
  const { host } = await routedShare(bench.edge, bench.hub, { target: 'http://127.0.0.1:8080', envZId });
  const { dir } = await enrollAgent(bench.hub, envZId, work);
  const agent = agentIn(dir, PING_MS);
  await agent.printed(/connected to edge/);
  t.is((await edgeRequest(bench.edge.httpPort!, host, { path: '/whoami' })).text, 'A');

  await bench.ns.link(false);
  const cut = Date.now();
  try {
    const line = await agent.printed(/disconnected from edge/, 10_000);
    t.regex(line, /no answer from the edge within 0\.5 s/);
    // while the path is still down: noticed by the agent itself, not by a reset when it comes back
    t.true(Date.now() - cut < 3 * PING_MS + 2000, `noticed after ${Date.now() - cut} ms`);
  } finally {
    await bench.ns.link(true);
  }
  // dialled again (backoff at most 5 s): the share is served through it again
  await waitFor(async () => (await edgeRequest(bench.edge.httpPort!, host, { path: '/whoami' })).text === 'A', {
    timeoutMs: 20_000,
    intervalMs: 250,
    what: 'the share served through the agent again',
  });
  t.is(agent.lines.filter((l) => /^connected to edge/.test(l)).length, 2, agent.lines.join('\n'));
});
