/**
 * A TCP share's bounds, apart from the hub's HTTP admission: a connection with no byte either way for the share's
 * `tcpIdleTimeout` is closed while one with bytes flowing stays (the edge's default, HUB_EDGE_TCP_IDLE_TIMEOUT, is an
 * hour here: a share without its own closes nothing), a PATCH applies to the connections already open, and bad values
 * are 400s naming the property; past HUB_EDGE_TCP_MAX_CONNECTIONS a share's new connections are closed at once, while
 * the hub's HTTP share, whose limit (HUB_EDGE_HUB_MAX_CONNECTIONS) is as small, still answers.
 */
import net from 'node:net';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { edgeRequest, freeRange, publicFrontendCertificate, publicFrontendId, routedShare, startBackend, startTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const base = await freeRange(3);
const MAX = 5;
const stack = useStack(test, {
  env: {
    HUB_EDGE_TCP_PORTS: `${base}-${base + 2}`,
    HUB_EDGE_TCP_IDLE_TIMEOUT: 'PT1H',
    HUB_EDGE_TCP_MAX_CONNECTIONS: String(MAX),
    HUB_EDGE_HUB_MAX_CONNECTIONS: String(MAX),
    HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000',
  },
});
let edge: Edge;
let hub: HubFixture;
let echoPort: number;
const cleanups: (() => Promise<unknown>)[] = [];
const sockets: net.Socket[] = [];
stack.onStop(async () => {
  for (const s of sockets) s.destroy();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
});

test.before(async () => {
  edge = await startTestEdge();
  hub = await stack.hub({ name: 'tcp-limits' });
  await publicFrontendCertificate(stack.databaseUrl);
  const echo = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((r) => echo.close(r)));
  echoPort = (echo.address() as net.AddressInfo).port;
});

const made: string[] = [];
test.afterEach.always(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const zId of made.splice(0)) await hub.call('DELETE', `${hub.h}/shares/${zId}`).catch(() => undefined);
});

async function tcpShare(body: Record<string, unknown> = {}): Promise<{ zId: string; port: number; json: any }> {
  const created = await hub.call('POST', `${hub.h}/shares`, {
    body: { name: 'tcp', frontendIds: [await publicFrontendId(hub)], protocol: 'tcp', target: `tcp://127.0.0.1:${echoPort}`, ...body },
  });
  if (created.status !== 201) throw new Error(`${created.status} ${created.text}`);
  made.push(created.json.zId);
  const port = Number(new URL(created.json.frontendEndpoint).port);
  await waitFor(async () => (await hub.call('GET', `${hub.h}/shares/${created.json.zId}`)).json.status === 'ACTIVE', { what: 'ACTIVE' });
  await waitFor(async () => edge.tcp.ports.includes(port), { timeoutMs: 2000, what: `the edge listening on ${port}` });
  return { zId: created.json.zId, port, json: created.json };
}

interface Conn {
  socket: net.Socket;
  closed: boolean;
  received: number;
}

/** A connection to the share's port, counting what comes back and whether the edge closed it. */
function connect(port: number): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    sockets.push(socket);
    const conn: Conn = { socket, closed: false, received: 0 };
    socket.on('data', (d: Buffer) => (conn.received += d.length));
    socket.on('error', () => undefined);
    socket.once('close', () => (conn.closed = true));
    socket.once('connect', () => resolve(conn));
    socket.once('error', reject);
  });
}

/** Whether a byte sent on `conn` comes back (the connection is carried to the echo target). */
async function echoes(conn: Conn): Promise<boolean> {
  const before = conn.received;
  conn.socket.write('x');
  try {
    await waitFor(async () => conn.received > before || conn.closed, { timeoutMs: 5000, what: 'the echo' });
  } catch {
    return false;
  }
  return conn.received > before;
}

test.serial(
  "a share's tcpIdleTimeout closes a connection with no bytes either way; one with bytes flowing stays; a PATCH applies to open connections",
  async (t) => {
    const share = await tcpShare({ name: 'tcp-idle', tcpIdleTimeout: 'PT2S' });
    t.is(share.json.tcpIdleTimeout, 'PT2S');
    const other = await tcpShare({ name: 'tcp-default' });
    t.is(other.json.tcpIdleTimeout, null, "null: the edge's HUB_EDGE_TCP_IDLE_TIMEOUT");

    const idle = await connect(share.port);
    const active = await connect(share.port);
    const elsewhere = await connect(other.port);
    t.true(await echoes(idle), 'carried');
    t.true(await echoes(elsewhere), 'carried');
    // bytes both ways every 200 ms on `active` while `idle` says nothing
    let answered = 0;
    let sent = 0;
    const ticker = setInterval(() => {
      if (active.closed) return;
      sent++;
      active.socket.write('.');
    }, 200);
    active.socket.on('data', (d: Buffer) => (answered += d.length));
    try {
      await waitFor(async () => idle.closed, { timeoutMs: 15_000, what: 'the idle connection closed' });
    } finally {
      clearInterval(ticker);
    }
    t.true(idle.closed, 'the idle connection was closed by the edge');
    t.false(active.closed, 'the active one stays');
    t.true(sent >= 5 && answered >= sent - 1, `every byte came back (${answered} of ${sent})`);
    t.true(await echoes(active), 'and is still carried');
    // the share without its own timeout has the edge's (an hour): still open and carried
    t.false(elsewhere.closed);
    t.true(await echoes(elsewhere));

    // a PATCH gives the other share a timeout: its connection open now is closed once silent that long
    const patched = await hub.call('PATCH', `${hub.h}/shares/${other.zId}`, { body: { tcpIdleTimeout: 'PT1S' } });
    t.is(patched.status, 200, patched.text);
    t.is(patched.json.tcpIdleTimeout, 'PT1S');
    await waitFor(async () => elsewhere.closed, { timeoutMs: 15_000, what: 'the patched share closing its idle connection' });
    t.true(elsewhere.closed);
    // back to the edge's default
    const reset = await hub.call('PATCH', `${hub.h}/shares/${other.zId}`, { body: { tcpIdleTimeout: null } });
    t.is(reset.json.tcpIdleTimeout, null);
  },
);

test.serial('tcpIdleTimeout: bad durations and an HTTP share are 400s naming the property, nothing made', async (t) => {
  const before = (await hub.call('GET', `${hub.h}/shares`)).json.content.length;
  for (const value of ['PT0S', 'PT0.5S', 'P2D', 'ten minutes', 600]) {
    const r = await hub.call('POST', `${hub.h}/shares`, {
      body: { name: 'bad', frontendIds: [await publicFrontendId(hub)], protocol: 'tcp', target: `tcp://127.0.0.1:${echoPort}`, tcpIdleTimeout: value },
    });
    t.is(r.status, 400, `${value}: ${r.text}`);
    t.is(r.json.error, 'invalid_request');
    t.regex(r.json.message, /tcpIdleTimeout/);
  }
  const http = await hub.call('POST', `${hub.h}/shares`, {
    body: { name: 'bad', frontendIds: [await publicFrontendId(hub)], target: `http://127.0.0.1:${echoPort}`, tcpIdleTimeout: 'PT1M' },
  });
  t.is(http.status, 400, http.text);
  t.regex(http.json.message, /tcpIdleTimeout.*TCP shares/);
  t.is((await hub.call('GET', `${hub.h}/shares`)).json.content.length, before);
  const share = await tcpShare({ name: 'tcp-patch-bad' });
  const bad = await hub.call('PATCH', `${hub.h}/shares/${share.zId}`, { body: { tcpIdleTimeout: 'P1Y' } });
  t.is(bad.status, 400, bad.text);
  t.regex(bad.json.message, /tcpIdleTimeout/);
});

test.serial(
  "past HUB_EDGE_TCP_MAX_CONNECTIONS a share's new connections are closed at once; the hub's HTTP share still answers; a freed place is taken again",
  async (t) => {
    const backend = await startBackend((_req, res) => res.end('http share'));
    cleanups.push(() => backend.close());
    const web = await routedShare(edge, hub, { name: 'web', target: backend.url });
    made.push(web.zId);
    const share = await tcpShare({ name: 'tcp-full' });
    const open: Conn[] = [];
    for (let i = 0; i < MAX; i++) {
      const c = await connect(share.port);
      t.true(await echoes(c), `connection ${i + 1} carried`);
      open.push(c);
    }
    // one more: closed by the edge, nothing carried
    const over = await connect(share.port);
    await waitFor(async () => over.closed, { timeoutMs: 5000, what: 'the connection over the limit closed' });
    t.is(over.received, 0);
    // the hub's HTTP share is not affected by the TCP share's connections (its own limit is as small)
    for (let i = 0; i < 5; i++) {
      const r = await edgeRequest(edge.httpPort!, web.host, { path: '/' });
      t.is(r.status, 200, r.text);
      t.is(r.text, 'http share');
    }
    // every connection under the limit is still carried; one closed frees a place
    for (const c of open) t.true(await echoes(c));
    open[0]!.socket.destroy();
    await waitFor(
      async () => {
        const again = await connect(share.port);
        const ok = await echoes(again);
        if (!ok) again.socket.destroy();
        return ok;
      },
      { timeoutMs: 5000, what: 'a new connection carried once a place is free' },
    );
    t.pass();
  },
);
