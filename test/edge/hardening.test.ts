/**
 * The red team's findings against the edge, each as exact bytes over real sockets: a raw client writing
 * what an attacker would, raw targets writing what a hostile tenant's target would, and what reaches the other side.
 * Each of these failed against the edge's former hand-written upstream client.
 */
import net from 'node:net';
import test from 'ava';
import WebSocket, { WebSocketServer } from 'ws';
import type { Edge } from '../../edge/server.js';
import { edgeRequest, routedShare, startBackend, startTestEdge } from '../helpers/edge.js';
import { answersComplete, rawConversation, rawExchange, rawTarget, recordingTarget } from '../helpers/raw.js';
import { useStack, waitFor } from '../helpers/stack.js';
import { keyAndCsr } from '../helpers/tlsClient.js';
import { assertRefused } from '../helpers/refusals.js';

const stack = useStack(test, {
  env: {
    HUB_EDGE_UPSTREAM_TIMEOUT_MS: '3000',
    HUB_EDGE_UPSTREAM_READ_TIMEOUT_MS: '500',
    HUB_EDGE_UPGRADE_IDLE_TIMEOUT_MS: '800',
    HUB_EDGE_HUB_MAX_CONNECTIONS: '4',
    HUB_EDGE_FLUSH_MS: '600000',
  },
});
stack.onStop(async () => {
  await edge?.stop(1000);
  for (const close of closers) await close().catch(() => undefined);
});
let edge: Edge;
const closers: (() => Promise<void>)[] = [];

test.before(async () => {
  edge = await startTestEdge();
});

async function recorder(answer?: Parameters<typeof recordingTarget>[0]) {
  const r = await recordingTarget(answer);
  closers.push(r.close);
  return r;
}
async function raw(answer: Parameters<typeof rawTarget>[0]) {
  const r = await rawTarget(answer);
  closers.push(r.close);
  return r;
}
const get = (host: string, path = '/', extra = '') => `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;
const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);

test('Connection: content-length cannot turn a body into a second request (smuggling); Connection: host keeps Host', async (t) => {
  const hub = await stack.hub();
  const target = await recorder();
  const { host } = await routedShare(edge, hub, { target: target.url });
  const smuggled = `GET /x HTTP/1.1\r\nHost: ${host}\r\nX-Client-Certificate-Name: victim\r\n\r\n`;
  const text = await rawExchange(
    edge.httpPort!,
    `POST /upload HTTP/1.1\r\nHost: ${host}\r\nConnection: content-length, host\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
    {
      done: (s) => answersComplete(s, 1),
    },
  );
  t.is(statusOf(text), 200, text);
  // a request after it, on a connection of its own: the target's connection is still in step
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/next' })).text, 'ok');
  t.deepEqual(
    target.requests.map((r) => r.url),
    ['/upload', '/next'],
    'the body never became a request of its own',
  );
  const [upload] = target.requests;
  t.is(upload.body, smuggled);
  t.is(upload.headers['content-length'], String(smuggled.length));
  t.is(upload.headers.host, host, 'Connection cannot remove Host');
  t.false(upload.rawHeaders.some((h) => h.toLowerCase() === 'x-client-certificate-name'));

  // a chunked body whose Transfer-Encoding is listed in Connection still arrives as that body
  const chunked = await rawExchange(
    edge.httpPort!,
    `POST /chunked HTTP/1.1\r\nHost: ${host}\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    {
      done: (s) => answersComplete(s, 1),
    },
  );
  t.is(statusOf(chunked), 200, chunked);
  t.is(target.requests.at(-1)?.body, 'hello');
});

test("chunked trailers of one answer never become headers of the next user's answer", async (t) => {
  const hub = await stack.hub();
  const reusedAt: number[] = [];
  const target = await raw((_head, index, socket) => {
    if (index === 0)
      return void socket.write(
        'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Set-Cookie\r\n\r\n5\r\nhello\r\n0\r\nSet-Cookie: stolen=1\r\nX-Trailer: yes\r\n\r\n',
      );
    reusedAt.push(index);
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  const first = await rawExchange(edge.httpPort!, get(host, '/', 'Connection: close\r\n'));
  t.regex(first, /hello/);
  t.notRegex(first, /stolen|X-Trailer/i, 'trailers are not passed on');
  for (let i = 0; i < 3; i++) {
    const next = await edgeRequest(edge.httpPort!, host);
    t.is(next.text, 'ok');
    t.is(next.headers['set-cookie'], undefined);
    t.is(next.headers['x-trailer'], undefined);
  }
  t.true(reusedAt.length > 0, 'the target connection was reused after the answer with trailers');
});

test('bytes after a complete answer never reach the next client (a forged head in the same write)', async (t) => {
  const hub = await stack.hub();
  let answered = 0;
  const target = await raw((_head, _index, socket) => {
    if (answered++ === 0)
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 403 Poisoned\r\nSet-Cookie: poison=1\r\nContent-Length: 0\r\n\r\n');
    else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh');
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  t.is((await edgeRequest(edge.httpPort!, host)).text, 'hello');
  for (let i = 0; i < 3; i++) {
    const next = await edgeRequest(edge.httpPort!, host);
    t.is(next.status, 200);
    t.is(next.text, 'fresh');
    t.is(next.headers['set-cookie'], undefined);
  }
});

test("one hub uploading another hub's client certificate does not lock that hub's users out", async (t) => {
  const hubA = await stack.hub();
  const hubB = await stack.hub();
  const backend = await startBackend((req, res) => res.end(String(req.headers['x-client-certificate-name'] ?? '')));
  closers.push(backend.close);
  const { keyPem, csrPem } = await keyAndCsr('/CN=alice');
  const generated = await hubA.call('POST', `${hubA.h}/client-certificates`, { body: { name: 'alice', value: csrPem } });
  t.is(generated.status, 201, generated.text);
  const certPem = (await hubA.call('GET', `${hubA.h}/client-certificates/${generated.json.id}`)).json.value;
  const shareA = await routedShare(edge, hubA, { target: backend.url, mutualTls: true });
  await edge.settled();
  const tls = { cert: certPem, key: keyPem, rejectUnauthorized: false };
  await waitFor(async () => (await edgeRequest(edge.httpsPort!, shareA.host, { tls })).status === 200, { timeoutMs: 2000, what: 'alice admitted' });
  // hub B uploads alice's public certificate (no private key needed to do that)
  const upload = await hubB.call('POST', `${hubB.h}/client-certificates`, { body: { name: 'copied', value: certPem } });
  t.is(upload.status, 201, upload.text);
  await edge.settled();
  const after = await edgeRequest(edge.httpsPort!, shareA.host, { tls });
  t.is(after.status, 200, after.text);
  t.is(after.text, 'alice', "hub A's own listing decides");
  // and hub B's share admits the exact certificate it uploaded, under B's name for it
  const shareB = await routedShare(edge, hubB, { target: backend.url, mutualTls: true });
  await edge.settled();
  const inB = await waitFor(
    async () => {
      const r = await edgeRequest(edge.httpsPort!, shareB.host, { tls });
      return r.status === 200 && r;
    },
    { timeoutMs: 2000, what: 'the upload admitted in B' },
  );
  t.is(inB.text, 'copied');
});

async function wsTarget() {
  const backend = await startBackend((_req, res) => res.end('plain'));
  const wss = new WebSocketServer({ server: backend.server });
  wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`echo:${data.toString()}`)));
  closers.push(async () => {
    wss.close();
    await backend.close();
  });
  return backend;
}

function openWs(url: string, options: WebSocket.ClientOptions): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

const closed = (ws: WebSocket) => new Promise<void>((resolve) => (ws.readyState === WebSocket.CLOSED ? resolve() : ws.once('close', () => resolve())));

test('deleting a client certificate closes its open WebSocket within 2 s; deleting a share closes its WebSockets', async (t) => {
  const hub = await stack.hub();
  const backend = await wsTarget();
  const { keyPem, csrPem } = await keyAndCsr('/CN=ws-user');
  const generated = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'ws-user', value: csrPem } });
  const certPem = (await hub.call('GET', `${hub.h}/client-certificates/${generated.json.id}`)).json.value;
  const { host } = await routedShare(edge, hub, { target: backend.url, mutualTls: true });
  await edge.settled();
  const ws = await waitFor(
    () =>
      openWs(`wss://127.0.0.1:${edge.httpsPort}/chat`, {
        headers: { host },
        servername: host,
        cert: certPem,
        key: keyPem,
        rejectUnauthorized: false,
      } as WebSocket.ClientOptions).catch(() => undefined),
    { timeoutMs: 2000, what: 'the WebSocket open' },
  );
  const echoed = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
  ws.send('hi');
  t.is(await echoed, 'echo:hi');
  const gone = closed(ws);
  t.is((await hub.call('DELETE', `${hub.h}/client-certificates/${generated.json.id}`)).status, 200);
  await waitFor(async () => Promise.race([gone.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]), {
    timeoutMs: 2000,
    intervalMs: 10,
    what: 'the WebSocket closed',
  });
  t.pass();

  // a public share's WebSocket closes when the share is deleted
  const open = await routedShare(edge, hub, { target: backend.url });
  const ws2 = await openWs(`ws://127.0.0.1:${edge.httpPort}/chat`, { headers: { host: open.host } });
  const gone2 = closed(ws2);
  t.is((await hub.call('DELETE', `${hub.h}/shares/${open.zId}`)).status, 204);
  await waitFor(async () => Promise.race([gone2.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]), {
    timeoutMs: 2000,
    intervalMs: 10,
    what: 'the WebSocket of the deleted share closed',
  });
});

test('header names with underscores never reach the target (CGI would read them as the identity headers)', async (t) => {
  const hub = await stack.hub();
  const target = await recorder();
  const { host } = await routedShare(edge, hub, { target: target.url });
  const text = await rawExchange(edge.httpPort!, get(host, '/', 'X_Client_Certificate_Name: admin\r\nX-Forwarded_Email: boss@example.com\r\nX-Fine: yes\r\n'), {
    done: (s) => answersComplete(s, 1),
  });
  t.is(statusOf(text), 200);
  const [seen] = target.requests;
  t.false(
    seen.rawHeaders.some((h, i) => i % 2 === 0 && h.includes('_')),
    JSON.stringify(seen.rawHeaders),
  );
  t.is(seen.headers['x-fine'], 'yes');
});

test('a share whose target is the edge itself is refused, directly (403) or through another proxy (508), without a loop', async (t) => {
  const hub = await stack.hub();
  const direct = await routedShare(edge, hub, { target: `http://127.0.0.1:${edge.httpPort}` });
  const d = await edgeRequest(edge.httpPort!, direct.host);
  assertRefused(t, d, 403, 'forbidden', 'EH_EGRESS_DENIED');
  for (const spelled of [`http://0.0.0.0:${edge.httpPort}`, `http://[::1]:${edge.httpPort}`, `http://localhost:${edge.httpPort}`]) {
    const s = await routedShare(edge, hub, { target: spelled });
    t.is((await edgeRequest(edge.httpPort!, s.host)).status, 403, spelled);
  }
  // a TCP forwarder in between: the request comes back to the edge carrying its hop mark
  let forwarded = 0;
  const forwarder = net.createServer((socket) => {
    forwarded++;
    const upstream = net.connect(edge.httpPort!, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((r) => forwarder.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise<void>((r) => forwarder.close(() => r())));
  const via = await routedShare(edge, hub, { target: `http://127.0.0.1:${(forwarder.address() as net.AddressInfo).port}` });
  const looped = await edgeRequest(edge.httpPort!, via.host);
  // refused on its second pass, and that refusal reaches the client as the first pass's target answer: with the
  // edge's answer, but without the code header, which only the edge's own answers carry
  t.is(looped.status, 508, looped.text);
  t.deepEqual(Object.keys(looped.json), ['error', 'message']);
  t.is(looped.json.error, 'loop_detected');
  t.is(looped.headers['edgehub-error-code'], undefined);
  t.is(forwarded, 1, 'the request came back once and was refused');
});

test('two Host headers are a 400; dot segments are resolved under the target path and may not climb above it', async (t) => {
  const hub = await stack.hub();
  const target = await recorder();
  const { host } = await routedShare(edge, hub, { target: `${target.url}/base` });
  const two = await rawExchange(edge.httpPort!, `GET / HTTP/1.1\r\nHost: ${host}\r\nHost: other.example\r\n\r\n`, { done: (s) => answersComplete(s, 1) });
  t.is(statusOf(two), 400, two);
  t.true(two.includes('"error":"bad_request"'), two);
  t.true(two.includes('\r\nedgehub-error-code: EH_REQUEST_MALFORMED\r\n'), two);
  const resolved = await rawExchange(edge.httpPort!, get(host, '/a/./b/../c?x=1'), { done: (s) => answersComplete(s, 1) });
  t.is(statusOf(resolved), 200);
  t.is(target.requests.at(-1)?.url, '/base/a/c?x=1');
  for (const path of ['/../admin', '/a/../../admin', '/%2e%2e/admin', '/a/.%2E/%2e./admin', '/x/..%2f..%2fadmin']) {
    const r = await rawExchange(edge.httpPort!, get(host, path), { done: (s) => answersComplete(s, 1) });
    t.is(statusOf(r), 400, `${path}: ${r}`);
  }
  t.false(
    target.requests.some((r) => r.url.includes('admin')),
    'no climbing path reached the target',
  );
  // an absolute-form request target for another host than Host is refused too
  const absolute = await rawExchange(edge.httpPort!, `GET http://other.example/x HTTP/1.1\r\nHost: ${host}\r\n\r\n`, { done: (s) => answersComplete(s, 1) });
  t.is(statusOf(absolute), 400, absolute);
});

test("the target URL's own query parameters win over the client's; the client's others follow", async (t) => {
  const hub = await stack.hub();
  const target = await recorder();
  const { host } = await routedShare(edge, hub, { target: `${target.url}/app?role=viewer&tenant=a` });
  await edgeRequest(edge.httpPort!, host, { path: '/page?role=admin&q=1&tenant=b&role%3D=x' });
  t.is(target.requests.at(-1)?.url, '/app/page?role=viewer&tenant=a&q=1&role%3D=x');
});

test('a target that stops in the middle of its body is cut off after the read timeout; the client sees a cut answer', async (t) => {
  const hub = await stack.hub();
  const target = await raw((_head, _i, socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial'));
  const { host } = await routedShare(edge, hub, { target: target.url });
  const { text, closedByPeer } = await rawConversation(edge.httpPort!, get(host), { timeoutMs: 15_000 });
  t.true(closedByPeer, 'the edge closed the client connection');
  t.regex(text, /^HTTP\/1\.1 200/);
  t.regex(text, /partial$/, 'never a forged end of the body');
  await waitFor(async () => target.open() === 0, { timeoutMs: 5000, what: 'the target connection closed' });
});

test('an upgrade whose client leaves before the target answers is cancelled; an idle upgraded connection is closed', async (t) => {
  const hub = await stack.hub();
  const silent = await raw(() => undefined);
  const { host } = await routedShare(edge, hub, { target: silent.url });
  const socket = net.connect(edge.httpPort!, '127.0.0.1');
  socket.write(get(host, '/ws', 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'));
  await waitFor(async () => silent.open() === 1, { what: 'the upgrade reached the target' });
  socket.destroy();
  // the connection that carried the upgrade request is closed (undici may open an idle one for its queue meanwhile)
  await waitFor(async () => silent.closed() >= 1, { timeoutMs: 2000, what: 'the upgrade cancelled at the target' });
  t.pass();

  const backend = await wsTarget();
  const share = await routedShare(edge, hub, { target: backend.url });
  const ws = await openWs(`ws://127.0.0.1:${edge.httpPort}/chat`, { headers: { host: share.host } });
  await closed(ws); // HUB_EDGE_UPGRADE_IDLE_TIMEOUT_MS is 800 here
  t.pass();
});

test('a hub at its limit of connections in progress is answered 503; another hub is served as before', async (t) => {
  const busy = await stack.hub();
  const calm = await stack.hub();
  const hanging = await raw(() => undefined);
  const fine = await recorder();
  const slow = await routedShare(edge, busy, { target: hanging.url });
  const ok = await routedShare(edge, calm, { target: fine.url });
  const sockets: net.Socket[] = [];
  for (let i = 0; i < 4; i++) {
    const s = net.connect(edge.httpPort!, '127.0.0.1');
    s.on('error', () => undefined);
    s.write(get(slow.host, `/${i}`));
    sockets.push(s);
  }
  try {
    await waitFor(async () => hanging.connections() === 4, { what: 'four requests in progress' });
    const refused = await edgeRequest(edge.httpPort!, slow.host);
    t.is(refused.status, 503, refused.text);
    t.is(refused.json.error, 'overloaded');
    t.is((await edgeRequest(edge.httpPort!, ok.host)).status, 200, 'the other hub is served');
  } finally {
    for (const s of sockets) s.destroy();
  }
  // the four ended: the hub is admitted again (its target still does not answer: 504 after the answer timeout)
  const again = await edgeRequest(edge.httpPort!, slow.host, { path: '/after' });
  t.is(again.status, 504, again.text);
});
