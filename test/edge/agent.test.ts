/**
 * The agent, against real isolation: each private network is a network namespace
 * (test/helpers/netns.ts) whose target listens on the namespace's own loopback, where the edge cannot reach it; the
 * agent runs inside it as `edgehub agent run` and dials the edge on the host's side of the veth. The edge listens on
 * every interface here (agents reach it through the veth); clients use 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import WebSocket from 'ws';
import type { Edge } from '../../edge/server.js';
import { freePort } from '../../scripts/services/index.js';
import { edgeRequest, publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { edgehubCli, enrollAgent, newEnvironment, runAgent as startAgent, startPrivateTarget, type RunningAgent } from '../helpers/agents.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { resetConfig } from '../../shared/config.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { scriptArgs } from '../helpers/script.js';
import { assertRefused } from '../helpers/refusals.js';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '3000', HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
});
let edge: Edge;
let hub: HubFixture;
let nsA: PrivateNetwork;
let nsB: PrivateNetwork;
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agents-'));
const cleanups: (() => Promise<unknown>)[] = [];

const TARGET = 'http://127.0.0.1:8080';

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0' });
  hub = await stack.hub();
  [nsA, nsB] = await Promise.all([privateNetwork(), privateNetwork()]);
  cleanups.push(
    () => nsA.remove(),
    () => nsB.remove(),
  );
  await Promise.all([startPrivateTarget(nsA, 'A'), startPrivateTarget(nsB, 'B')]);
  // the worker's first start issues the public frontend's certificate (what agents verify the edge by)
  await publicFrontendCertificate(stack.databaseUrl);
});

const environment = (h = hub) => newEnvironment(h);
const cli = edgehubCli;
const enrolled = (envZId: string, h = hub) => enrollAgent(h, envZId, work);
/** An agent run (helpers/agents.ts), killed when the file ends. */
function runAgent(ns: PrivateNetwork, dir: string, edgePorts: number[], extra: string[] = []): RunningAgent {
  const agent = startAgent(ns, dir, edgePorts, extra);
  cleanups.push(() => agent.stop('SIGKILL'));
  return agent;
}

const get = (host: string, p = '/whoami', request: Parameters<typeof edgeRequest>[2] = {}) => edgeRequest(edge.httpPort!, host, { path: p, ...request });

test.serial('enrollment: a one-time JWT, the identity written by the command line (key 0600), the agent listed; refusals are 4xx', async (t) => {
  const envZId = await environment();
  const enrollment = await hub.call('POST', `${hub.h}/environments/${envZId}/agent-enrollment`, { body: { ttl: 'PT10M' } });
  t.is(enrollment.status, 201);
  t.is(enrollment.json.envZId, envZId);
  t.is(enrollment.json.hubId, hub.hubId);
  t.regex(enrollment.json.url, new RegExp(`/hub/v2/${hub.hubId}/agents/enroll$`));
  const ttlMs = Date.parse(enrollment.json.expiresAt) - Date.now();
  t.true(ttlMs > 9 * 60_000 && ttlMs <= 10 * 60_000, `expiresAt ${enrollment.json.expiresAt}`);

  const dir = path.join(mkdtempSync(path.join(work, 'enroll-')), 'identity');
  const r = await cli(['agent', 'enroll', enrollment.json.jwt, '--dir', dir]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /enrolled agent \S+ of environment/);
  t.is(statSync(path.join(dir, 'agent.key')).mode & 0o777, 0o600);
  const meta = JSON.parse(readFileSync(path.join(dir, 'agent.json'), 'utf8'));
  t.is(meta.envZId, envZId);
  t.is(meta.hubId, hub.hubId);
  t.true(meta.edges.length >= 1);
  t.regex(readFileSync(path.join(dir, 'agent.crt'), 'utf8'), /(BEGIN CERTIFICATE[\s\S]*){3}/, 'the certificate with the issuing CA and the root');
  t.regex(readFileSync(path.join(dir, 'edge-ca.pem'), 'utf8'), /BEGIN CERTIFICATE/);

  // the JWT is spent
  const again = await cli(['agent', 'enroll', enrollment.json.jwt, '--dir', path.join(dir, 'second')]);
  t.is(again.code, 1);
  t.regex(again.stderr, /already used/);

  const env = await hub.call('GET', `${hub.h}/environments/${envZId}`);
  t.is(env.status, 200);
  t.deepEqual(
    env.json.agents.map((a: { id: string }) => a.id),
    [meta.id],
  );
  t.like(env.json.agents[0], { connected: false, connectedAt: null, edges: [] });

  // failures are clear 4xx, nothing written
  t.is((await hub.call('POST', `${hub.h}/environments/${envZId}/agent-enrollment`, { body: { ttl: 'P8D' } })).status, 400);
  t.is((await hub.call('POST', `${hub.h}/environments/${envZId}/agent-enrollment`, { body: { ttl: 'soon' } })).status, 400);
  t.is((await hub.call('POST', `${hub.h}/environments/nope/agent-enrollment`, { body: {} })).status, 404);
  t.is((await hub.call('DELETE', `${hub.h}/environments/${envZId}/agents/nope`)).status, 404);
  const fresh = await hub.call('POST', `${hub.h}/environments/${envZId}/agent-enrollment`, { body: {} });
  const badCsr = await stack.call('POST', `/hub/v2/${hub.hubId}/agents/enroll`, { body: { jwt: fresh.json.jwt, csr: 'not a csr' } });
  t.is(badCsr.status, 400);
  const forged = await stack.call('POST', `/hub/v2/${hub.hubId}/agents/enroll`, { body: { jwt: fresh.json.jwt.slice(0, -4) + 'AAAA', csr: 'x' } });
  t.is(forged.status, 403);
  const otherHub = await stack.hub();
  const wrongHub = await stack.call('POST', `/hub/v2/${otherHub.hubId}/agents/enroll`, { body: { jwt: fresh.json.jwt, csr: 'x' } });
  t.is(wrongHub.status, 403);
  t.is((await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.agents.length, 1, 'no agent from the refused attempts');
  // a bad CSR did not spend the JWT
  t.is((await cli(['agent', 'enroll', fresh.json.jwt, '--dir', path.join(dir, 'third')])).code, 0);
});

test.serial('traffic through the agent: the edge cannot reach the target; requests, MiB both ways, WebSocket, TCP stream, metering, presence', async (t) => {
  const envZId = await environment();
  // without an agent the edge connects itself, and the namespace's loopback is out of its reach
  const { host, zId } = await routedShare(edge, hub, { target: TARGET, envZId });
  const direct = await get(host);
  t.not(direct.text, 'A', 'the edge cannot reach the private target itself');

  const { dir, id } = await enrolled(envZId);
  // an environment with an agent enrolled but none connected: an immediate 502 naming the environment
  await waitFor(async () => (await get(host)).json?.message?.includes('no agent connected'), { what: '502 no agent connected' });
  const none = await get(host);
  t.is(none.status, 502);
  t.is(none.json.error, 'bad_gateway');
  t.true(none.json.message.includes(envZId));

  const agent = runAgent(nsA, dir, [edge.httpsPort!]);
  await agent.printed(/connected to edge/);
  const ok = await get(host);
  t.is(ok.status, 200);
  t.is(ok.text, 'A');

  // 6 MiB up and echoed back, 9 MiB down, intact
  const upload = Buffer.alloc(6 * 1024 * 1024);
  for (let i = 0; i < upload.length; i++) upload[i] = (i * 7) % 256;
  const echoed = await get(host, '/echo', { method: 'POST', body: upload, headers: { 'content-type': 'application/octet-stream' } });
  t.is(echoed.status, 200);
  t.true(echoed.body.equals(upload), 'the upload came back byte for byte');
  const down = await get(host, `/bytes?n=${9 * 1024 * 1024}`);
  t.is(down.body.length, 9 * 1024 * 1024);
  t.true(down.body.every((b, i) => b === i % 251));

  // a WebSocket through the agent
  const ws = new WebSocket(`ws://127.0.0.1:${edge.httpPort}/ws`, { headers: { host } });
  const reply = await new Promise<string>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send('hello'));
    ws.once('message', (data) => resolve(data.toString()));
  });
  t.is(reply, 'A:hello');
  ws.close();

  // presence: connected on this edge
  await waitFor(async () => (await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.agents[0]?.connected, { what: 'agent connected in the API' });
  const listed = (await hub.call('GET', `${hub.h}/environments/${envZId}/agents`)).json[0];
  t.is(listed.id, id);
  t.is(listed.edges.length, 1);
  t.truthy(listed.connectedAt);

  // metering counts the client's bytes as for any share
  await edge.meter.flush();
  const metrics = await hub.call('GET', `${hub.h}/shares/${zId}/metrics?range=PT1H`);
  const totals = metrics.json.samples.reduce((s: { rx: number; tx: number }, p: { rx: number; tx: number }) => ({ rx: s.rx + p.rx, tx: s.tx + p.tx }), {
    rx: 0,
    tx: 0,
  });
  t.true(totals.rx > upload.length, `rx ${totals.rx}`);
  t.true(totals.tx > upload.length + down.body.length, `tx ${totals.tx}`);
});

test.serial('a raw TCP stream through the agent (what IPsec shares use), half-close honoured', async (t) => {
  const envZId = await environment();
  // the agent connects only to targets of its environment's shares: the TCP echo is one
  await routedShare(edge, hub, { target: 'http://127.0.0.1:9090', envZId });
  const { dir } = await enrolled(envZId);
  const agent = runAgent(nsA, dir, [edge.httpsPort!]);
  await agent.printed(/connected to edge/);
  const gateway = edge.agents;
  await waitFor(async () => gateway.connected(hub.hubId, envZId).length, { what: 'agent on the gateway' });
  const stream = await gateway.openStream(hub.hubId, envZId, '127.0.0.1:9090');
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((resolve) => stream.once('end', resolve));
  stream.write('ping ');
  stream.end('pong');
  await ended;
  t.is(Buffer.concat(chunks).toString(), 'ping pong');
  const refused = await gateway.openStream(hub.hubId, envZId, '127.0.0.1:22').then(
    () => 'opened',
    (err: Error & { code?: string }) => err.code,
  );
  t.is(refused, 'EH_AGENT_REFUSED_TARGET', 'a target that is no share of the environment is refused by the agent');
});

test.serial('two agents share the load and fail over at once; none left is an immediate 502; a restarted agent serves again', async (t) => {
  const envZId = await environment();
  const { host } = await routedShare(edge, hub, { target: TARGET, envZId });
  const [first, second] = await Promise.all([enrolled(envZId), enrolled(envZId)]);
  const a = runAgent(nsA, first.dir, [edge.httpsPort!]);
  const b = runAgent(nsB, second.dir, [edge.httpsPort!]);
  await Promise.all([a.printed(/connected to edge/), b.printed(/connected to edge/)]);
  await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 2, { what: 'two agents on the gateway' });

  // concurrent slow requests open several target connections: each agent carries some
  const answers = await Promise.all(Array.from({ length: 12 }, () => get(host, '/slow')));
  const seen = new Set(answers.map((r) => r.text));
  t.deepEqual([...seen].sort(), ['A', 'B'], 'both private networks answered');

  // agent A killed: every following request is carried by B, none fails
  await a.stop('SIGKILL');
  const after = await Promise.all(Array.from({ length: 8 }, () => get(host, '/whoami')));
  t.deepEqual(
    after.map((r) => `${r.status} ${r.text}`),
    Array(8).fill('200 B'),
  );

  // no agent left: an immediate 502 naming the environment
  await b.stop('SIGKILL');
  await waitFor(async () => (await get(host)).status === 502, { what: '502 once both agents are gone' });
  const started = Date.now();
  const gone = await get(host);
  t.is(gone.status, 502);
  t.true(gone.json.message.includes(envZId));
  t.true(Date.now() - started < 1000, 'answered at once, not after a timeout');

  // restarted: serving again within seconds
  const again = runAgent(nsA, first.dir, [edge.httpsPort!]);
  await again.printed(/connected to edge/);
  await waitFor(async () => (await get(host)).text === 'A', { timeoutMs: 5000, what: 'the restarted agent serving' });
  t.pass();
});

test.serial("revocation: the agent's connections close within 2 s and it is refused when it dials again", async (t) => {
  const envZId = await environment();
  const { host } = await routedShare(edge, hub, { target: TARGET, envZId });
  const { dir, id } = await enrolled(envZId);
  const agent = runAgent(nsA, dir, [edge.httpsPort!]);
  await agent.printed(/connected to edge/);
  t.is((await get(host)).text, 'A');
  // a WebSocket open through it
  const ws = new WebSocket(`ws://127.0.0.1:${edge.httpPort}/ws`, { headers: { host } });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const closed = new Promise<number>((resolve) => ws.once('close', () => resolve(Date.now())));

  const revokedAt = Date.now();
  t.is((await hub.call('DELETE', `${hub.h}/environments/${envZId}/agents/${id}`)).status, 204);
  t.true((await closed) - revokedAt < 2000, 'the WebSocket through the revoked agent closed within 2 s');
  await agent.printed(/disconnected from edge/, 5000);
  // it dials again and the edge refuses it; the share has no agent left and stays closed (reach agent): 502
  await agent.printed(/cannot connect to edge .*revoked/, 10_000);
  t.is((await get(host)).status, 502);
  t.deepEqual((await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.agents, []);
});

test.serial("deleting the agent's environment revokes it too: the edge closes its connection and refuses it when it dials again", async (t) => {
  const envZId = await environment();
  const { dir } = await enrolled(envZId);
  const agent = runAgent(nsA, dir, [edge.httpsPort!]);
  await agent.printed(/connected to edge/);
  await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length === 1, { what: 'the agent on the gateway' });
  t.is((await hub.call('DELETE', `${hub.h}/environments/${envZId}`)).status, 204);
  await agent.printed(/disconnected from edge/, 5000);
  await agent.printed(/cannot connect to edge .*revoked/, 10_000);
  t.is(edge.agents.connected(hub.hubId, envZId).length, 0);
});

test.serial("another hub's agent never carries this hub's traffic", async (t) => {
  const other = await stack.hub();
  const otherEnv = await environment(other);
  const envZId = await environment();
  const { host } = await routedShare(edge, hub, { target: TARGET, envZId });
  await enrolled(envZId); // this hub's environment has an agent, not connected
  const foreign = await enrolled(otherEnv, other);
  const agent = runAgent(nsA, foreign.dir, [edge.httpsPort!]);
  await agent.printed(/connected to edge/);
  const r = await get(host);
  t.is(r.status, 502);
  t.true(r.json.message.includes(envZId));
  t.not(r.text, 'A');
});

test.serial('the agent refuses targets outside its environment and outside --allow', async (t) => {
  const envZId = await environment();
  const { host } = await routedShare(edge, hub, { target: TARGET, envZId });
  const { dir } = await enrolled(envZId);
  const agent = runAgent(nsA, dir, [edge.httpsPort!], ['--allow', '127.0.0.1:9090']);
  await agent.printed(/connected to edge/);
  const r = await get(host);
  assertRefused(t, r, 502, 'bad_gateway', 'EH_AGENT_REFUSED_TARGET');
  const bad = await cli(['agent', 'run', '--dir', dir, '--allow', 'nonsense']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--allow 'nonsense'/);
});

test.serial('two edge processes: the agent dials both and each serves the share; an edge restarted is dialed again', async (t) => {
  const envZId = await environment();
  const { host } = await routedShare(edge, hub, { target: TARGET, envZId });
  const { dir, id } = await enrolled(envZId);
  const [httpPort, httpsPort] = await Promise.all([freePort(), freePort()]);
  const spawnEdge = () => {
    const child = spawn(process.execPath, scriptArgs('edge/index.ts'), {
      env: { ...process.env, HUB_PROCESS: 'edge', HUB_EDGE_HTTP_PORT: String(httpPort), HUB_EDGE_HTTPS_PORT: String(httpsPort), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    cleanups.push(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    return { child, exited };
  };
  let second = spawnEdge();
  await waitFor(async () => (await edgeRequest(httpPort, 'probe.invalid').catch(() => ({ status: 0 }))).status === 404, { what: 'the second edge' });
  const agent = runAgent(nsA, dir, [edge.httpsPort!, httpsPort]);
  await waitFor(async () => agent.lines.filter((l) => /connected to edge/.test(l)).length >= 2, { what: 'connected to both edges' });
  t.is((await get(host)).text, 'A');
  await waitFor(async () => (await edgeRequest(httpPort, host, { path: '/whoami' })).text === 'A', { what: 'the second edge serving through the agent' });
  await waitFor(
    async () => (await hub.call('GET', `${hub.h}/environments/${envZId}`)).json.agents.find((a: { id: string }) => a.id === id)?.edges.length === 2,
    { what: 'two edges listed' },
  );

  second.child.kill('SIGTERM');
  await second.exited;
  await agent.printed(/disconnected from edge .*:\d+/);
  second = spawnEdge();
  await waitFor(async () => (await edgeRequest(httpPort, host, { path: '/whoami' }).catch(() => ({ text: '' }))).text === 'A', {
    timeoutMs: 30_000,
    what: 'the restarted edge serving through the agent again',
  });
  t.pass();
});

test.serial('edgehub share: enrolls this machine, publishes the target, prints its address, serves it, deletes the share on Ctrl-C', async (t) => {
  const apiPort = new URL(stack.baseUrl).port;
  // inside the namespace, 127.0.0.1:<api port> leads to the service (a forwarder), as the JWT's enrollment url says;
  // enrollment hands the agent the edge's address as seen from the namespace
  const forwarder = nsB.spawn(process.execPath, [
    '-e',
    `const net = require('net'); net.createServer((s) => { const u = net.connect(${apiPort}, '${nsB.hostIp}'); s.pipe(u).pipe(s); u.on('error', () => s.destroy()); s.on('error', () => u.destroy()); }).listen(${apiPort}, '127.0.0.1', () => console.log('ready'));`,
  ]);
  await new Promise((resolve) => forwarder.stdout!.once('data', resolve));
  process.env.HUB_EDGE_AGENT_ADDRESSES = `${nsB.hostIp}:${edge.httpsPort}`;
  resetConfig();
  t.teardown(() => {
    delete process.env.HUB_EDGE_AGENT_ADDRESSES;
    resetConfig();
  });
  const dir = path.join(mkdtempSync(path.join(work, 'share-')), 'agent');
  const child = nsB.spawn(process.execPath, ['agent/bin/edgehub.js', 'share', 'http://localhost:8080', '--dir', dir], {
    env: { ...process.env, EDGEHUB_URL: `http://127.0.0.1:${apiPort}`, EDGEHUB_API_KEY: hub.token },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => child.kill('SIGKILL'));
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const line = await waitFor(async () => /share (\S+): (\S+) -> http:\/\/localhost:8080\//.exec(out), { what: 'the share line' }).catch((e) => {
    throw new Error(`${(e as Error).message}; stdout: ${out}; stderr: ${err}`);
  });
  const [, zId, endpoint] = line;
  await agentLine(() => out, /connected to edge/);
  const host = new URL(endpoint).hostname;
  await waitFor(async () => edge.routes.lookup(host), { what: 'the share routed' });
  let last = '';
  await waitFor(async () => (last = (await get(host)).text) === 'B', { what: `the public address serving the private target (last answer: ${last})` }).catch(
    (e) => {
      throw new Error(`${(e as Error).message}; last answer ${last}; agent: ${out} ${err}`);
    },
  );
  t.regex(out, /enrolled this machine as agent/);

  child.kill('SIGINT');
  t.is(await exited, 0, err);
  t.regex(out, new RegExp(`share ${zId} deleted`));
  const share = await hub.call('GET', `${hub.h}/shares/${zId}`);
  t.true(share.status === 404 || ['DELETING', 'DELETED'].includes(share.json.status), `share after Ctrl-C: ${share.status} ${share.text}`);
});

const agentLine = (text: () => string, pattern: RegExp) => waitFor(async () => pattern.test(text()), { what: `output matching ${pattern}` });
