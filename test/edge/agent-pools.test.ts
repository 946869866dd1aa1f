/**
 * Agent pools, against real agents: three private networks (network namespaces, test/helpers/netns.ts), each with
 * its own copy of the target answering its own name, so that which agent carried a request is seen in the answer.
 * Weights and priorities, draining (SIGTERM, `edgehub agent drain`, a second SIGTERM, --drain-timeout) and a rolling
 * restart under steady load, with outcomes counted.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import WebSocket from 'ws';
import { readIdentity, writeIdentity } from '../../agent/lib/identity.js';
import { selfSignedCertificate } from '../helpers/selfSigned.js';
import { AgentRunner } from '../../agent/lib/run.js';
import type { Edge } from '../../edge/server.js';
import { edgehubCli, enrollAgent, newEnvironment, runAgent as startAgent, runAgentHere, startPrivateTarget, type RunningAgent } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, publicFrontendId, routedShare, startBackend, startTestEdge } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { assertRefused } from '../helpers/refusals.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

// the agents probe their targets every 300 ms here (3 s by default): a target is down after three failed probes
process.env.EDGEHUB_AGENT_PROBE_MS = '300';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000', HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
  for (const ns of networks) await ns.remove();
});
let edge: Edge;
let hub: HubFixture;
let networks: PrivateNetwork[] = [];
let targets: ChildProcess[] = [];
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-pools-'));
const cleanups: (() => Promise<unknown>)[] = [];
const NAMES = ['A', 'B', 'C'];

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0' });
  hub = await stack.hub();
  networks = await Promise.all(NAMES.map(() => privateNetwork()));
  targets = await Promise.all(networks.map((ns, i) => startPrivateTarget(ns, NAMES[i])));
  await publicFrontendCertificate(stack.databaseUrl);
});

interface Agent extends RunningAgent {
  dir: string;
  id: string;
  /** Resolves with the exit code (set up at start: a stop by signal does not race it). */
  exited: Promise<number | null>;
}

/** `edgehub agent run` of an enrolled identity in network `i` (A, B, C), killed when the file ends. */
function run(i: number, identity: { dir: string; id: string }, extra: string[] = []): Agent {
  const agent = startAgent(networks[i], identity.dir, [edge.httpsPort!], extra);
  const exited = new Promise<number | null>((resolve) => {
    if (agent.child.exitCode !== null) resolve(agent.child.exitCode);
    agent.child.once('exit', (code) => resolve(code));
  });
  cleanups.push(() => agent.stop('SIGKILL'));
  return { ...agent, ...identity, exited };
}

const get = (host: string, p = '/whoami') => edgeRequest(edge.httpPort!, host, { path: p });

/** Who answered `n` requests, one after the other: counts by name (and by status for failures). */
async function tally(host: string, n: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const r = await get(host);
    const key = r.status === 200 ? r.text : `${r.status} ${r.json?.message ?? r.text}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

test.serial(
  'weights spread requests, a higher priority is a backup used only when no preferred agent is left; out-of-range flags are refused with one line; agents[] shows the pool state',
  async (t) => {
    const envZId = await newEnvironment(hub);
    const { host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId });
    const ids = await Promise.all(NAMES.map(() => enrollAgent(hub, envZId, work)));

    for (const [flag, value] of [
      ['--weight', '0'],
      ['--weight', '101'],
      ['--priority', '10'],
      ['--priority', 'first'],
    ]) {
      const r = await edgehubCli(['agent', 'run', '--dir', ids[0].dir, flag, value]);
      t.is(r.code, 2, `${flag} ${value}`);
      t.regex(r.stderr, new RegExp(`^edgehub: ${flag} '${value}': expected a whole number from \\d to \\d+\\n$`));
    }

    const a = run(0, ids[0], ['--weight', '1']);
    const b = run(1, ids[1], ['--weight', '3']);
    const c = run(2, ids[2], ['--priority', '1', '--weight', '50']);
    await Promise.all([a, b, c].map((x) => x.printed(/connected to edge/)));
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 3, { what: 'three agents on the gateway' });

    const first = await tally(host, 200);
    t.deepEqual(Object.keys(first).sort(), ['A', 'B'], `only the preferred agents (priority 0) answer: ${JSON.stringify(first)}`);
    t.true(first.A >= 40 && first.A <= 60 && first.B >= 140 && first.B <= 160, `weights 1:3 over 200 requests: ${JSON.stringify(first)}`);

    const env = await waitFor(
      async () => {
        const r = await hub.call('GET', `${hub.h}/environments/${envZId}`);
        return (
          r.json.agents.every((x: { connected: boolean; weight: number }) => x.connected) &&
          r.json.agents.some((x: { weight: number }) => x.weight === 50) &&
          r.json
        );
      },
      { what: 'the agents connected, with their pool state' },
    );
    const shown = Object.fromEntries(
      env.agents.map((x: { id: string; weight: number; priority: number; draining: boolean; targetsDown: string[] }) => [
        x.id,
        [x.weight, x.priority, x.draining, x.targetsDown],
      ]),
    );
    t.deepEqual(shown, { [ids[0].id]: [1, 0, false, []], [ids[1].id]: [3, 0, false, []], [ids[2].id]: [50, 1, false, []] });

    // B gone: A alone carries them, the backup still none
    await b.stop('SIGKILL');
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'B gone from the gateway' });
    t.deepEqual(await tally(host, 20), { A: 20 });
    // A gone too: the backup takes over at once
    await a.stop('SIGKILL');
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 1, { what: 'A gone from the gateway' });
    t.deepEqual(await tally(host, 20), { C: 20 });
    // a preferred agent back: the backup gets nothing new
    const again = run(0, ids[0]);
    await again.printed(/connected to edge/);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'A back on the gateway' });
    t.deepEqual(await tally(host, 20), { A: 20 });

    // per-agent figures in Prometheus: B carried exactly its requests of the first 200, and bytes both ways
    const scrape = await stack.call('GET', '/metrics', { auth: stack.admin });
    t.is(scrape.status, 200);
    const figure = (name: string, labels: string) =>
      Number(new RegExp(`${name}\\{[^}]*agent="${ids[1].id}"${labels}[^}]*\\} (\\d+)`).exec(scrape.text)?.[1] ?? 0);
    t.is(figure('edgehub_edge_agent_requests_total', ''), first.B);
    t.true(figure('edgehub_edge_agent_bytes_total', '[^}]*direction="to_agent"') > 0);
    t.true(figure('edgehub_edge_agent_bytes_total', '[^}]*direction="from_agent"') > 0);
  },
);

test.serial(
  'draining: an agent told to drain takes nothing new, lets a WebSocket in flight finish, then exits 0; a second SIGTERM stops it at once; --drain-timeout bounds the wait',
  async (t) => {
    const envZId = await newEnvironment(hub);
    const { host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId });
    const [ida, idb] = await Promise.all([enrollAgent(hub, envZId, work), enrollAgent(hub, envZId, work)]);
    const b = run(1, idb);
    let a = run(0, ida);
    await Promise.all([a.printed(/connected to edge/), b.printed(/connected to edge/)]);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'two agents on the gateway' });

    /** A WebSocket through the edge carried by agent A (opened until one lands there). */
    const socketOnA = async () => {
      for (let i = 0; i < 20; i++) {
        const ws = new WebSocket(`ws://127.0.0.1:${edge.httpPort}/ws`, { headers: { host } });
        await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
        const said = await echo(ws, 'who');
        if (said === 'A:who') return ws;
        ws.close();
      }
      throw new Error('no WebSocket landed on A');
    };
    /** The echo of `text`, or why none came within 10 s. */
    const echo = (ws: WebSocket, text: string) =>
      new Promise<string>((resolve) => {
        const timer = setTimeout(() => resolve('no echo within 10 s'), 10_000);
        ws.once('message', (d) => (clearTimeout(timer), resolve(d.toString())));
        ws.once('close', () => (clearTimeout(timer), resolve('closed')));
        ws.send(text);
      });

    // edgehub agent drain: A is draining while its WebSocket lives; new requests all go to B; the socket still works
    let ws = await socketOnA();
    const drain = edgehubCli(['agent', 'drain', '--dir', ida.dir]);
    await a.printed(/^draining: /);
    await waitFor(
      async () => (await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.agents.find((x: { id: string }) => x.id === ida.id)?.draining === true,
      {
        what: 'A shown draining',
      },
    );
    t.deepEqual(await tally(host, 20), { B: 20 }, 'nothing new to the draining agent');
    t.is(await echo(ws, 'still'), 'A:still', 'the WebSocket in flight still carried');
    t.is(a.child.exitCode, null, 'A waits for its WebSocket');
    ws.close();
    t.is(await a.exited, 0);
    t.true(a.lines.includes('drained: everything in flight finished'), a.lines.join(' | '));
    const drained = await drain;
    t.is(drained.code, 0, drained.stderr);
    t.regex(drained.stdout, /agent \d+ drained and stopped/);
    // no agent running with that folder any more: one line
    const none = await edgehubCli(['agent', 'drain', '--dir', ida.dir]);
    t.is(none.code, 1);
    t.regex(none.stderr, /^edgehub: no agent is running with /);

    // SIGTERM, then a second SIGTERM: stops at once, the WebSocket in flight notwithstanding
    a = run(0, ida);
    await a.printed(/connected to edge/);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'A back' });
    ws = await socketOnA();
    a.child.kill('SIGTERM');
    await a.printed(/^draining: /);
    a.child.kill('SIGTERM');
    t.is(await a.exited, 0);
    t.true(a.lines.includes('second SIGTERM: stopping at once'), a.lines.join(' | '));
    ws.terminate();

    // --drain-timeout: what is still open then is closed, and the agent exits 0
    a = run(0, ida, ['--drain-timeout', '2']);
    await a.printed(/connected to edge/);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'A back again' });
    ws = await socketOnA();
    const closed = new Promise((resolve) => ws.once('close', resolve));
    a.child.kill('SIGTERM');
    t.is(await a.exited, 0);
    t.true(
      a.lines.some((l) => /^drain timeout: streams still open after 2 s were closed$/.test(l)),
      a.lines.join(' | '),
    );
    await waitFor(() => Promise.race([closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000))]), {
      what: 'the WebSocket closed',
    });
    t.is((await get(host)).text, 'B');
  },
);

test.serial('a rolling restart of every agent of an environment, one at a time, under steady load, fails no request', async (t) => {
  const envZId = await newEnvironment(hub);
  const { host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId });
  const ids = await Promise.all(NAMES.map(() => enrollAgent(hub, envZId, work)));
  const agents = NAMES.map((_, i) => run(i, ids[i]));
  await Promise.all(agents.map((x) => x.printed(/connected to edge/)));
  await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 3, { what: 'three agents on the gateway' });

  // steady load: 8 clients, each a request after the other (slow answers keep requests in flight at every moment)
  const outcomes: Record<string, number> = {};
  let loading = true;
  const client = async () => {
    while (loading) {
      const r = await get(host, '/slow').catch((e: Error) => ({ status: 0, text: e.message, json: undefined }));
      const key = r.status === 200 && NAMES.includes(r.text) ? 'ok' : `${r.status} ${r.json?.message ?? r.text}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
    }
  };
  const clients = Array.from({ length: 8 }, client);
  const served = (name: string) => waitFor(async () => (await tally(host, 6))[name] > 0, { what: `${name} serving again` });

  for (let i = 0; i < agents.length; i++) {
    // one by SIGTERM, one by edgehub agent drain, one by SIGTERM again
    if (i === 1) t.is((await edgehubCli(['agent', 'drain', '--dir', ids[i].dir])).code, 0);
    else agents[i].child.kill('SIGTERM');
    t.is(await agents[i].exited, 0, `${NAMES[i]} drained and exited 0`);
    agents[i] = run(i, ids[i]);
    await agents[i].printed(/connected to edge/);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 3, { what: `${NAMES[i]} back on the gateway` });
    await served(NAMES[i]);
  }
  loading = false;
  await Promise.all(clients);
  const failed = Object.entries(outcomes).filter(([k]) => k !== 'ok');
  t.deepEqual(failed, [], `failed requests during the rolling restart (of ${Object.values(outcomes).reduce((x, y) => x + y, 0)})`);
  t.true((outcomes.ok ?? 0) >= 50, `requests carried: ${outcomes.ok}`);
});

/** Stops the target of network `i` (its agent can no longer connect to it). */
async function stopTarget(i: number): Promise<void> {
  const child = targets[i];
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await waitFor(() => Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 500))]), {
    what: `target ${NAMES[i]} stopped`,
  });
}

test.serial(
  'target health: an agent that reports the target down gets none of its requests, a backup takes over, all down is a 502 saying so, and a target back up is used again',
  async (t) => {
    const envZId = await newEnvironment(hub);
    const { host, zId } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId });
    const [ida, idb] = await Promise.all([enrollAgent(hub, envZId, work), enrollAgent(hub, envZId, work)]);
    const a = run(0, ida);
    const b = run(1, idb, ['--priority', '1']);
    await Promise.all([a.printed(/connected to edge/), b.printed(/connected to edge/)]);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'two agents on the gateway' });
    t.deepEqual(await tally(host, 10), { A: 10 });
    const downAt = async () => {
      const r = await hub.call('GET', `${hub.h}/environments/${envZId}`);
      return Object.fromEntries(r.json.agents.map((x: { id: string; targetsDown: string[] }) => [x.id === ida.id ? 'A' : 'B', x.targetsDown]));
    };

    try {
      // A's target stops: A says so, and the backup B carries every request
      await stopTarget(0);
      await a.printed(/^target 127\.0\.0\.1:8080 is down \(3 failed TCP probes\)/);
      await waitFor(async () => (await downAt()).A?.[0] === zId, { what: "A's targetsDown naming the share" });
      t.deepEqual(await tally(host, 20), { B: 20 });

      // B's too: a 502 that says the target is down at every agent (not "no agent connected")
      await stopTarget(1);
      await b.printed(/^target 127\.0\.0\.1:8080 is down/);
      const r = await waitFor(
        async () => {
          const answer = await get(host);
          return /down at every agent/.test(answer.json?.message ?? '') && answer;
        },
        { what: 'the 502 saying the target is down at every agent' },
      );
      assertRefused(t, r, 502, 'bad_gateway', 'EH_TARGET_DOWN_AT_AGENTS');
      // (the edge writes what agents report to the database every few seconds: the API shows it at the next write)
      await waitFor(async () => (await downAt()).B?.[0] === zId, { what: "B's targetsDown naming the share" });
      t.deepEqual(await downAt(), { A: [zId], B: [zId] });

      // A's target back: A is up again after its probes, and preferred again
      targets[0] = await startPrivateTarget(networks[0], 'A');
      await a.printed(/^target 127\.0\.0\.1:8080 is up again/);
      await waitFor(async () => (await get(host)).text === 'A', { what: 'A serving again' });
      t.deepEqual(await tally(host, 20), { A: 20 });
    } finally {
      if (targets[0].exitCode !== null || targets[0].signalCode !== null) targets[0] = await startPrivateTarget(networks[0], 'A');
      if (targets[1].exitCode !== null || targets[1].signalCode !== null) targets[1] = await startPrivateTarget(networks[1], 'B');
    }
  },
);

test.serial("an agent's report of a target down that is not its environment's is ignored; of its own share's target, it is heeded", async (t) => {
  // the agent runs in this process, so that what it reports can be set; its target is on this host
  const backend = await startBackend((_req, res) => res.end('here'));
  cleanups.push(() => backend.close());
  const envZId = await newEnvironment(hub);
  const { host, zId } = await routedShare(edge, hub, { target: backend.url, envZId });
  const { dir, id } = await enrollAgent(hub, envZId, work);
  const runner = new AgentRunner({ identity: readIdentity(dir), edges: [`127.0.0.1:${edge.httpsPort}`], log: () => undefined }).start();
  cleanups.push(() => runner.stop());
  await waitFor(async () => (await get(host)).text === 'here', { what: 'the share served through the in-process agent' });
  const shown = async () => (await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.agents.find((x: { id: string }) => x.id === id);

  runner.pool.setDown('10.9.9.9:80', true);
  runner.pool.setDown('127.0.0.1:1', true);
  await waitFor(async () => (await shown())?.connected, { what: 'the agent shown connected' });
  t.deepEqual(await tally(host, 10), { here: 10 }, 'still served: the claims name no target of its environment');
  t.deepEqual((await shown()).targetsDown, []);

  runner.pool.setDown(`127.0.0.1:${backend.port}`, true);
  const r = await waitFor(
    async () => {
      const answer = await get(host);
      return answer.status === 502 && answer;
    },
    { what: 'the 502 once its own target is reported down' },
  );
  assertRefused(t, r, 502, 'bad_gateway', 'EH_TARGET_DOWN_AT_AGENTS');
  t.regex(r.json.message, new RegExp(`target 127\\.0\\.0\\.1:${backend.port} is down at every agent of environment ${envZId}`));
  await waitFor(async () => (await shown())?.targetsDown?.[0] === zId, { what: 'targetsDown naming the share' });
  runner.pool.setDown(`127.0.0.1:${backend.port}`, false);
  await waitFor(async () => (await get(host)).text === 'here', { what: 'served again once reported up' });
  t.pass();
});

test.serial(
  'affinity: a signed cookie keeps a client on its agent until that agent goes; a forged or foreign cookie is ignored; client-ip keeps an address on one agent; bad values are 400s',
  async (t) => {
    const envZId = await newEnvironment(hub);
    const bad = await hub.call('POST', `${hub.h}/shares`, {
      body: { name: 'x', frontendIds: [await publicFrontendId(hub)], target: 'http://127.0.0.1:8080', envZId, affinity: 'sticky' },
    });
    assertRefused(t, bad, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.affinity');
    const { host, zId, json } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId, affinity: 'cookie' });
    t.is(json.affinity, 'cookie');
    const other = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId, affinity: 'cookie', name: 'other' });
    const [ida, idb] = await Promise.all([enrollAgent(hub, envZId, work), enrollAgent(hub, envZId, work)]);
    const agents = [run(0, ida), run(1, idb)];
    await Promise.all(agents.map((x) => x.printed(/connected to edge/)));
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'two agents on the gateway' });

    const withCookie = (h: string, cookie?: string) => edgeRequest(edge.httpPort!, h, { path: '/whoami', headers: cookie ? { cookie } : {} });
    const first = await withCookie(host);
    const setCookie = String(first.headers['set-cookie'] ?? '');
    t.regex(setCookie, /^edgehub_affinity=[A-Za-z0-9_-]{32}; Path=\/; HttpOnly; SameSite=Lax$/, 'host-only (no Domain), HttpOnly');
    const cookie = setCookie.split(';')[0];
    t.false(cookie.includes(ida.id) || cookie.includes(idb.id), 'opaque: the agent id is not in it');
    const sticky = first.text;
    const answers = await Promise.all(Array.from({ length: 20 }, () => withCookie(host, `a=1; ${cookie}`)));
    t.deepEqual([...new Set(answers.map((r) => r.text))], [sticky], 'every request with the cookie on its agent');
    t.true(
      answers.every((r) => r.headers['set-cookie'] === undefined),
      'no new cookie while its agent is usable',
    );
    // without the cookie, requests are spread (both agents answer)
    t.deepEqual(Object.keys(await tally(host, 10)).sort(), ['A', 'B']);

    // a forged cookie, and one the other share set: ignored (answered, a new cookie set), never an error
    const forged = await withCookie(host, 'edgehub_affinity=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    t.is(forged.status, 200);
    t.regex(String(forged.headers['set-cookie'] ?? ''), /^edgehub_affinity=/);
    const foreign = String((await withCookie(other.host)).headers['set-cookie'] ?? '').split(';')[0];
    t.regex(foreign, /^edgehub_affinity=/);
    const elsewhere = await withCookie(host, foreign);
    t.is(elsewhere.status, 200);
    t.regex(String(elsewhere.headers['set-cookie'] ?? ''), /^edgehub_affinity=/, "another share's cookie names no agent of this one");

    // its agent gone: the client moves, and is given a cookie naming the new one
    const gone = sticky === 'A' ? 0 : 1;
    await agents[gone].stop('SIGKILL');
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 1, { what: 'the sticky agent gone from the gateway' });
    const moved = await withCookie(host, cookie);
    t.is(moved.status, 200);
    t.is(moved.text, NAMES[1 - gone]);
    const renewed = String(moved.headers['set-cookie'] ?? '').split(';')[0];
    t.regex(renewed, /^edgehub_affinity=/);
    t.not(renewed, cookie);
    agents[gone] = run(gone, gone === 0 ? ida : idb);
    await agents[gone].printed(/connected to edge/);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'both agents again' });
    const staying = await Promise.all(Array.from({ length: 10 }, () => withCookie(host, renewed)));
    t.deepEqual([...new Set(staying.map((r) => r.text))], [NAMES[1 - gone]], 'a client stays with its new agent when the old one is back');

    // client-ip: every request from this address on one agent; no cookie
    const patched = await hub.call('PATCH', `${hub.h}/shares/${zId}`, { body: { affinity: 'client-ip' } });
    t.is(patched.status, 200, patched.text);
    t.is(patched.json.affinity, 'client-ip');
    await waitFor(async () => (await withCookie(host)).headers['set-cookie'] === undefined, { what: 'the edge taking the change' });
    const byIp = await tally(host, 20);
    t.is(Object.keys(byIp).length, 1, `one agent for one client address: ${JSON.stringify(byIp)}`);

    const tcpBad = await hub.call('POST', `${hub.h}/shares`, {
      body: { name: 'tcp', frontendIds: [await publicFrontendId(hub)], target: 'tcp://127.0.0.1:9090', protocol: 'tcp', envZId, affinity: 'client-ip' },
    });
    assertRefused(t, tcpBad, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.affinity');
  },
);

test.serial(
  "target health by the share's HTTP health check: an answer with another status is down, whatever the TCP port says; the check fixed, up again",
  async (t) => {
    const envZId = await newEnvironment(hub);
    const { host } = await routedShare(edge, hub, { target: 'http://127.0.0.1:8080', envZId });
    const [ida, idb] = await Promise.all([enrollAgent(hub, envZId, work), enrollAgent(hub, envZId, work)]);
    const a = run(0, ida);
    const b = run(1, idb, ['--priority', '1']);
    await Promise.all([a.printed(/connected to edge/), b.printed(/connected to edge/)]);
    await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'two agents on the gateway' });
    t.deepEqual(await tally(host, 5), { A: 5 });

    // a health check of the share's target that its targets fail (404 where it expects 200)
    const check = await hub.call('POST', `${hub.h}/health-checks`, {
      body: { name: 'pool-check', method: 'GET', path: '/nope', expectedStatus: 200, target: 'http://127.0.0.1:8080' },
    });
    t.is(check.status, 201, check.text);
    try {
      await Promise.all([
        a.printed(/^target 127\.0\.0\.1:8080 is down \(3 failed HTTP check probes\)/),
        b.printed(/^target 127\.0\.0\.1:8080 is down \(3 failed HTTP check probes\)/),
      ]);
      const r = await waitFor(
        async () => {
          const answer = await get(host);
          return answer.status === 502 && answer;
        },
        { what: 'the 502 once every agent reports the target down' },
      );
      assertRefused(t, r, 502, 'bad_gateway', 'EH_TARGET_DOWN_AT_AGENTS');

      // the check fixed: up again, and A preferred
      t.is((await hub.call('PATCH', `${hub.h}/health-checks/${check.json.id}`, { body: { path: '/whoami' } })).status, 200);
      await a.printed(/^target 127\.0\.0\.1:8080 is up again/);
      await waitFor(async () => (await get(host)).text === 'A', { what: 'A serving again' });
      t.deepEqual(await tally(host, 10), { A: 10 });
    } finally {
      await hub.call('DELETE', `${hub.h}/health-checks/${check.json.id}`);
    }
  },
);

test.serial('a draining agent still answers a stream an edge sends it anyway (a race), then exits 0', async (t) => {
  // an edge of this test's own (a TLS listener speaking the agents' protocol) that goes on sending after the drain
  const certs = mkdtempSync(path.join(work, 'race-'));
  const edgeCert = selfSignedCertificate(certs, 'edge', '/CN=agent.share.localhost', 'DNS:agent.share.localhost');
  const agentCert = selfSignedCertificate(certs, 'agent', '/CN=race agent');
  const echo = net.createServer((s) => s.pipe(s));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => echo.close(resolve)));
  const target = `127.0.0.1:${(echo.address() as net.AddressInfo).port}`;
  let session: http2.ClientHttp2Session | undefined;
  const connected = new Promise<http2.ClientHttp2Session>((resolve) => {
    const server = tls.createServer(
      { cert: edgeCert.cert, key: edgeCert.key, ALPNProtocols: ['edgehub-agent/1'], requestCert: true, rejectUnauthorized: false },
      (socket) => {
        session = http2.connect('http://agent', { createConnection: () => socket });
        session.on('error', () => undefined);
        resolve(session);
      },
    );
    server.listen(0, '127.0.0.1');
    cleanups.push(() => new Promise((done) => (session?.destroy(), server.close(done))));
    server.once('listening', () => {
      const dir = path.join(certs, 'identity');
      writeIdentity(dir, {
        id: 'race-agent',
        hubId: 'race',
        envZId: 'race',
        edges: [`127.0.0.1:${(server.address() as net.AddressInfo).port}`],
        edgeServerName: 'agent.share.localhost',
        serviceUrl: '',
        keyPem: agentCert.key,
        certificatePem: agentCert.cert,
        edgeCaPem: edgeCert.cert,
      });
      agentHolder.push(runAgentHere(dir, []));
    });
  });
  const agentHolder: RunningAgent[] = [];
  const edgeSession = await connected;
  const agent = agentHolder[0];
  cleanups.push(() => agent.stop('SIGKILL'));
  const exited = new Promise<number | null>((resolve) => agent.child.once('exit', (code) => resolve(code)));

  /** A request of this edge to the agent: its status and body. */
  const ask = (headers: http2.OutgoingHttpHeaders, body?: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const stream = edgeSession.request(headers);
      let text = '';
      let status = 0;
      stream.setEncoding('utf8');
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (d: string) => (text += d));
      stream.once('end', () => resolve({ status, body: text }));
      stream.once('error', reject);
      stream.end(body);
    });
  const taken = await ask({ ':method': 'PUT', ':path': '/edgehub/v1/targets', 'content-type': 'application/json' }, JSON.stringify({ targets: [target] }));
  t.is(taken.status, 200);
  t.like(JSON.parse(taken.body), { serves: [target], weight: 1, priority: 0, draining: false });

  // the state stream: the drain is said on it
  const states: { draining: boolean }[] = [];
  const state = edgeSession.request({ ':method': 'GET', ':path': '/edgehub/v1/state' });
  state.setEncoding('utf8');
  state.on('data', (d: string) =>
    states.push(
      ...d
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ),
  );
  state.end();
  await waitFor(async () => states.length >= 1, { what: 'the first state line' });
  agent.child.kill('SIGTERM');
  await waitFor(async () => states.some((s) => s.draining), { what: 'the drain said on the state stream' });

  // a stream sent anyway: carried to the target and back
  const stream = edgeSession.request({ ':method': 'CONNECT', ':authority': target }, { endStream: false });
  const status = await new Promise<number>((resolve) => stream.once('response', (h) => resolve(Number(h[':status']))));
  t.is(status, 200, 'answered, not dropped');
  const back = new Promise<string>((resolve) => {
    let got = '';
    stream.setEncoding('utf8');
    stream.on('data', (d: string) => (got += d));
    stream.once('end', () => resolve(got));
  });
  stream.end('sent after the drain');
  t.is(await back, 'sent after the drain');
  t.is(await exited, 0);
  t.true(agent.lines.includes('drained: everything in flight finished'), agent.lines.join(' | '));
});
