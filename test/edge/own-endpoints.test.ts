/**
 * The service's own endpoints are never a tenant's target: its PostgreSQL, its Redis, the API, the edge's HTTP port
 * and its TCP share ports, found as an attacker would (the ports the running stack uses), in every spelling of this
 * host (127.1, 0x7f000001, ::ffff:127.0.0.1, [::1], 0.0.0.0, localhost, an interface address). A TCP share and a
 * health check aimed there are refused at create (403); one made before the check (its target written directly)
 * has its connections closed with nothing relayed, and its runs and replays are refused; HTTP shares answer 403;
 * an identity provider's discovery there is refused.
 * Health checks that get no answer say "unreachable", whatever the socket said. Loopback targets on other ports
 * still work.
 */
import net from 'node:net';
import os from 'node:os';
import test from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { edgeRequest, freeRange, publicFrontendId, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { assertRefused } from '../helpers/refusals.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const tcpBase = await freeRange(2);
const edgePort = await freePort();
const stack = useStack(test, { env: { HUB_EDGE_TCP_PORTS: `${tcpBase}-${tcpBase + 1}`, HUB_EDGE_HTTP_PORT: String(edgePort), HUB_EDGE_FLUSH_MS: '600000' } });
let reached = 0;
const backend = useBackend(test, stack, (_req, res) => {
  reached++;
  res.end('reached');
});
const edge = useTestEdge(test, stack, { httpPort: edgePort });
let hub: HubFixture;
/** The TCP share of the tests (the range has two ports). */
let tcpZId: string | undefined;

/** A loopback TCP server of the test: `echo` sends back what it gets, `reset` resets every connection at once. */
async function server(kind: 'echo' | 'reset' | 'garbage'): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const s = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    if (kind === 'echo') socket.pipe(socket);
    else if (kind === 'reset') socket.resetAndDestroy();
    else socket.end('SSH-2.0-not-http\r\n');
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const close = () =>
    new Promise<void>((r) => {
      s.close(() => r());
      for (const socket of sockets) socket.destroy();
    });
  // closed after the file's tests whatever happened
  stack.onStop(close);
  return { port: (s.address() as net.AddressInfo).port, close };
}

/** The service's own endpoints, as the running stack shows them. */
function ownPorts(): { what: string; port: number }[] {
  return [
    { what: 'PostgreSQL', port: Number(new URL(process.env.DATABASE_URL!).port) },
    { what: 'Redis', port: Number(new URL(process.env.REDIS_URL!).port) },
    { what: 'the API', port: Number(process.env.PORT) },
    { what: "the edge's HTTP port", port: edgePort },
    { what: 'a TCP share port nothing listens on yet', port: tcpBase + 1 },
  ];
}

/** An address of one of this host's interfaces that is not loopback (undefined when there is none). */
const interfaceAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

/** This host, spelled every way: literals, the forms only a resolver reads, a name. */
const SPELLINGS = ['127.0.0.1', '127.1', '0x7f000001', '[::ffff:127.0.0.1]', '[::1]', '0.0.0.0', 'localhost', ...(interfaceAddress ? [interfaceAddress] : [])];

test.before(async () => {
  hub = await stack.hub();
});

const tcpCreate = async (target: string) =>
  hub.call('POST', `${hub.h}/shares`, { body: { name: 'tcp', frontendIds: [await publicFrontendId(hub)], protocol: 'tcp', target } });

/** Everything a TCP connection to `port` receives after sending `bytes`, until it closes (or 5 s pass). */
function received(port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect({ host: '127.0.0.1', port });
    // a store that answered keeps the connection open: what it sent is the outcome
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('data', (d) => (text += d));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
    socket.write(bytes);
  });
}

test.serial("a TCP share aimed at one of the service's own endpoints is refused at create (403), in every spelling of this host", async (t) => {
  for (const { what, port } of ownPorts()) {
    for (const host of SPELLINGS) {
      const r = await tcpCreate(`tcp://${host}:${port}`);
      assertRefused(t, r, 403, 'forbidden', 'EH_TARGET_DENIED');
      t.regex(r.json?.message ?? '', /the service's own endpoint/, `${what} as ${host}`);
    }
  }
  t.deepEqual((await hub.call('GET', `${hub.h}/shares`)).json.content, [], 'no share was made');
});

test.serial(
  'a TCP share made before the check and aimed at Redis or PostgreSQL has its connections closed with nothing relayed; a loopback echo on another port is carried',
  async (t) => {
    const echo = await server('echo');
    const created = await tcpCreate(`tcp://127.0.0.1:${echo.port}`);
    t.is(created.status, 201, created.text);
    const zId = created.json.zId;
    const port = Number(new URL(created.json.frontendEndpoint).port);
    tcpZId = zId;
    await waitFor(async () => edge.tcp.ports.includes(port), { what: 'the edge listening on the TCP share port' });
    t.is(await exchange(port, 'carried'), 'carried', 'the echo is carried');
    const { envZId } = (await hub.call('GET', `${hub.h}/shares/${zId}`)).json;
    for (const { what, port: own } of ownPorts().slice(0, 2)) {
      // as a share written before this version: the target is set in the database, not through the API
      await stack.sql.query('UPDATE shares SET target = $1 WHERE z_id = $2', [`tcp://localhost:${own}`, zId]);
      await waitFor(async () => edge.tcp.targetsOf(hub.hubId, envZId).includes(`localhost:${own}`) && edge.tcp.ports.includes(port), {
        what: `the share aimed at ${what}`,
      });
      t.is(await received(port, 'PING\r\nCONFIG GET dir\r\n'), '', `${what}: nothing came back`);
    }
    await echo.close();
  },
);

test.serial('HTTP shares aimed at the service are 403 at the edge (never reaching it); replays of an inspected exchange too', async (t) => {
  for (const { what, port } of ownPorts()) {
    const hosts = what === 'Redis' ? SPELLINGS.filter((h) => !h.startsWith('0x')) : ['127.0.0.1', 'localhost'];
    for (const host of hosts) {
      const { host: shareHost } = await routedShare(edge, hub, { target: `http://${host}:${port}` });
      const r = await edgeRequest(edge.httpPort!, shareHost);
      assertRefused(t, r, 403, 'forbidden', 'EH_EGRESS_DENIED');
    }
  }
  // a share's target is fixed: a replay goes where the share goes (here, one written to aim at Redis after recording)
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/recorded' })).status, 200);
  const [original] = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${zId}/requests`);
      return r.status === 200 && r.json.length > 0 && r.json;
    },
    { what: 'the exchange recorded' },
  );
  const redis = ownPorts()[1].port;
  await stack.sql.query('UPDATE shares SET target = $1 WHERE z_id = $2', [`http://127.0.0.1:${redis}`, zId]);
  await waitFor(async () => edge.routes.lookup(host)?.target.port === String(redis), { what: 'the share aimed at Redis' });
  const replay = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${original.id}/replay`);
  t.is(replay.status, 201, replay.text);
  t.is(replay.json.status, 403, 'the replay was refused by the egress policy');
});

test.serial("login: an identity provider's discovery aimed at the service's API is refused before connecting", async (t) => {
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: {
      name: 'own-idp',
      type: 'OIDC',
      config: { clientId: 'c', clientSecret: 's', issuerUrl: `http://localhost:${process.env.PORT}` },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const { host } = await routedShare(edge, hub, { target: backend.url, authProviderId: provider.json.id });
  const r = await edgeRequest(edge.httpPort!, host, { headers: { accept: 'text/html' } });
  assertRefused(t, r, 502, 'bad_gateway', 'EH_IDP_UNREACHABLE', '(EH_EGRESS_DENIED)');
});

test.serial("health checks aimed at the service: 403 at create, update and test; a stored one's run is ERROR and never connects", async (t) => {
  const check = (target: string) => ({ name: 'probe', method: 'GET', path: '/', expectedStatus: 200, target });
  const ok = await hub.call('POST', `${hub.h}/health-checks`, { body: check(backend.url) });
  t.is(ok.status, 201, ok.text);
  const id = ok.json.id;
  for (const { what, port } of ownPorts()) {
    for (const host of ['127.0.0.1', '127.1', '[::ffff:127.0.0.1]', '0.0.0.0', 'localhost']) {
      const target = `http://${host}:${port}`;
      assertRefused(t, await hub.call('POST', `${hub.h}/health-checks`, { body: check(target) }), 403, 'forbidden', 'EH_TARGET_DENIED');
      assertRefused(t, await hub.call('PATCH', `${hub.h}/health-checks/${id}`, { body: { target } }), 403, 'forbidden', 'EH_TARGET_DENIED');
      assertRefused(t, await hub.call('POST', `${hub.h}/health-checks/${id}:test`, { body: { target } }), 403, 'forbidden', 'EH_TARGET_DENIED');
      t.pass(`${what} as ${host}`);
    }
    // one stored before this version
    await stack.sql.query('UPDATE health_checks SET target = $1 WHERE id = $2', [`http://localhost:${port}`, id]);
    const run = await hub.call('POST', `${hub.h}/health-checks/${id}:execute`);
    t.is(run.status, 200, run.text);
    t.like(run.json, { result: 'ERROR', status: null }, what);
    t.regex(run.json.message, /denied by the egress policy \(the service's own endpoint\)/, what);
  }
  const listed = (await hub.call('GET', `${hub.h}/health-checks`)).json.content;
  t.is(listed.length, 1, 'nothing was created');
});

test.serial('a health check that gets no answer says "unreachable", whether the port is closed, resets or speaks something else', async (t) => {
  const reset = await server('reset');
  const garbage = await server('garbage');
  const closed = await freePort();
  const messages: string[] = [];
  for (const port of [closed, reset.port, garbage.port]) {
    const created = await hub.call('POST', `${hub.h}/health-checks`, {
      body: { name: `scan-${port}`, method: 'GET', path: '/', expectedStatus: 200, target: `http://127.0.0.1:${port}` },
    });
    t.is(created.status, 201, created.text);
    const run = await hub.call('POST', `${hub.h}/health-checks/${created.json.id}:execute`);
    t.like(run.json, { result: 'ERROR', status: null });
    messages.push(run.json.message);
    const tested = await hub.call('POST', `${hub.h}/health-checks/${created.json.id}:test`, { body: {} });
    messages.push(tested.json.message);
    messages.push((await hub.call('GET', `${hub.h}/health-checks/${created.json.id}`)).json.lastResult?.message);
    messages.push((await hub.call('GET', `${hub.h}/executions/${run.json.executionId}`)).json.result?.message);
  }
  t.deepEqual(messages, Array(12).fill('unreachable'));
  await reset.close();
  await garbage.close();
});

test.serial('loopback targets on other ports still work: an HTTP share, a TCP share and a health check', async (t) => {
  const before = reached;
  for (const target of [backend.url, `http://localhost:${backend.port}`]) {
    const { host } = await routedShare(edge, hub, { target });
    const r = await edgeRequest(edge.httpPort!, host);
    t.is(r.status, 200);
    t.is(r.text, 'reached');
  }
  t.is(reached, before + 2);
  const echo = await server('echo');
  if (tcpZId) await hub.call('DELETE', `${hub.h}/shares/${tcpZId}`);
  const created = await tcpCreate(`tcp://localhost:${echo.port}`);
  t.is(created.status, 201, created.text);
  const port = Number(new URL(created.json.frontendEndpoint).port);
  await waitFor(async () => edge.tcp.ports.includes(port), { what: 'the edge listening on the TCP share port' });
  t.is(await exchange(port, 'over TCP'), 'over TCP');
  await echo.close();
  const check = await hub.call('POST', `${hub.h}/health-checks`, {
    body: { name: 'fine', method: 'GET', path: '/', expectedStatus: 200, target: `http://localhost:${backend.port}` },
  });
  t.is(check.status, 201, check.text);
  t.like((await hub.call('POST', `${hub.h}/health-checks/${check.json.id}:execute`)).json, { result: 'SUCCESS', status: 200 });
});

/** Sends `text`, ends, and reads to the end. */
function exchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    socket.on('data', (d) => (got += d));
    socket.on('end', () => resolve(got));
    socket.on('error', reject);
    socket.end(text);
  });
}
