import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import test from 'ava';
import WebSocket, { WebSocketServer } from 'ws';
import { edgeRequest, readBody, routedShare, startBackend, useBackend, useTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { assertRefused } from '../helpers/refusals.js';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '700', HUB_EDGE_FLUSH_MS: '600000' } });
const backend = useBackend(test, stack, async (req, res) => {
  if (req.url?.startsWith('/slow')) return; // never answers: the edge times out
  if (req.url?.startsWith('/reset')) return req.socket.destroy();
  const body = await readBody(req);
  seen.set(req.url!, { method: req.method!, headers: req.headers, body });
  res.setHeader('x-backend', 'yes');
  res.setHeader('connection', 'keep-alive, x-secret-hop');
  res.setHeader('x-secret-hop', 'must not pass');
  res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
  // a target that dresses its answer as a refusal of the edge
  res.setHeader('edgehub-error-code', 'EH_MTLS_NO_CERT');
  res.end(JSON.stringify({ method: req.method, url: req.url, length: body.length }));
});
const edge = useTestEdge(test, stack);
let hub: HubFixture;
/** What the echo backend saw, by request URL (tests run concurrently against it). */
const seen = new Map<string, { method: string; headers: http.IncomingHttpHeaders; body: Buffer }>();

test.before(async () => {
  hub = await stack.hub();
});

test('a share is proxied: method, path and query appended to the target path, headers and body through, hop-by-hop removed, X-Forwarded-* set', async (t) => {
  const { host, json } = await routedShare(edge, hub, { target: `${backend.url}/app` });
  t.is(json.frontendEndpoint, `http://${host}:8000`, 'the default public frontend template');
  const r = await edgeRequest(edge.httpPort!, `${host}:8000`, {
    method: 'POST',
    path: '/items/42?x=1&y=two',
    headers: {
      'content-type': 'text/plain',
      'x-custom': 'kept',
      connection: 'keep-alive, x-drop-me',
      'x-drop-me': 'listed in Connection',
      'keep-alive': 'timeout=5',
      'x-forwarded-for': '6.6.6.6',
      'x-forwarded-host': 'evil.example',
      'x-client-certificate-name': 'forged',
    },
    body: 'hello edge',
  });
  t.is(r.status, 200, r.text);
  t.deepEqual(r.json, { method: 'POST', url: '/app/items/42?x=1&y=two', length: 10 });
  t.is(r.headers['x-backend'], 'yes');
  t.deepEqual(r.headers['set-cookie'], ['a=1; Path=/', 'b=2; Path=/']);
  t.is(r.headers['x-secret-hop'], undefined, 'a header the target listed in Connection does not reach the client');
  t.is(r.headers['edgehub-error-code'], undefined, "a target's answer carries no code of the edge, even one the target wrote");
  const got = seen.get('/app/items/42?x=1&y=two')!;
  const h = got.headers;
  t.is(got.body.toString(), 'hello edge');
  t.is(h['x-custom'], 'kept');
  t.is(h.host, `${host}:8000`, 'Host passes through unchanged');
  t.is(h['x-drop-me'], undefined);
  t.is(h['keep-alive'], undefined);
  t.is(h['x-forwarded-for'], '127.0.0.1', "the client's own X-Forwarded-For is replaced, not trusted");
  t.is(h['x-forwarded-proto'], 'http');
  t.is(h['x-forwarded-host'], `${host}:8000`);
  t.is(h['x-client-certificate-name'], undefined, 'identity headers are never taken from the client');
});

test('routing is by Host, case-insensitive and port ignored; unknown hosts and shares answer 404 JSON', async (t) => {
  const { host, zId } = await routedShare(edge, hub, { target: backend.url });
  t.is((await edgeRequest(edge.httpPort!, host.toUpperCase())).status, 200);
  t.is((await edgeRequest(edge.httpPort!, `${host}:1234`)).status, 200);
  for (const other of ['nothing.share.localhost', 'example.com', `${zId}.elsewhere.localhost`, `x.${host}`]) {
    const r = await edgeRequest(edge.httpPort!, other);
    assertRefused(t, r, 404, 'not_found', 'EH_SHARE_NOT_PUBLISHED');
  }
});

test('a share deleted through the API answers 404 within 2 s', async (t) => {
  const { host, zId } = await routedShare(edge, hub, { target: backend.url });
  t.is((await edgeRequest(edge.httpPort!, host)).status, 200);
  t.is((await hub.call('DELETE', `${hub.h}/shares/${zId}`)).status, 204);
  const r = await waitFor(
    async () => {
      const answer = await edgeRequest(edge.httpPort!, host);
      return answer.status === 404 && answer;
    },
    { timeoutMs: 2000, intervalMs: 20, what: 'the deleted share answering 404' },
  );
  assertRefused(t, r, 404, 'not_found', 'EH_SHARE_NOT_PUBLISHED');
});

test.serial('a share is not routed before it is ACTIVE', async (t) => {
  await stack.stopWorkers();
  try {
    const frontends = await hub.call('GET', `${hub.h}/frontends`);
    const created = await hub.call('POST', `${hub.h}/shares`, { body: { name: 'early', frontendIds: [frontends.json[0].id], target: backend.url } });
    t.is(created.json.status, 'PROVISIONING');
    await edge.settled();
    t.is((await edgeRequest(edge.httpPort!, new URL(created.json.frontendEndpoint).hostname)).status, 404);
  } finally {
    await stack.startWorkers();
  }
});

test('502 when the target refuses or resets, 504 when it does not answer', async (t) => {
  const closed = await startBackend(() => undefined);
  await closed.close(); // a port nothing listens on
  const refused = await routedShare(edge, hub, { target: closed.url });
  const r1 = await edgeRequest(edge.httpPort!, refused.host);
  assertRefused(t, r1, 502, 'bad_gateway', 'EH_TARGET_UNREACHABLE', 'ECONNREFUSED'); // names the cause

  const live = await routedShare(edge, hub, { target: backend.url });
  const reset = await edgeRequest(edge.httpPort!, live.host, { path: '/reset' });
  t.is(reset.status, 502);
  t.is(reset.json.error, 'bad_gateway');

  const slow = await edgeRequest(edge.httpPort!, live.host, { path: '/slow' });
  t.is(slow.status, 504);
  t.is(slow.json.error, 'gateway_timeout');
});

test('10 MiB streamed both ways: the target reads the upload while it is still being sent, the client reads the download while it is still being made', async (t) => {
  const size = 10 * 1024 * 1024;
  let uploadStarted: () => void;
  const uploadSeen = new Promise<void>((r) => (uploadStarted = r));
  let downloadRead: () => void;
  const downloadStarted = new Promise<void>((r) => (downloadRead = r));
  const big = await startBackend((req, res) => {
    if (req.method === 'POST') {
      const hash = createHash('sha256');
      let length = 0;
      req.on('data', (c: Buffer) => {
        if (length === 0) uploadStarted();
        length += c.length;
        hash.update(c);
      });
      req.on('end', () => res.end(JSON.stringify({ length, sha256: hash.digest('hex') })));
      return;
    }
    // first half, then the rest only once the client has read from the first
    const chunk = Buffer.alloc(1024 * 1024, 7);
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    for (let i = 0; i < 5; i++) res.write(chunk);
    void downloadStarted.then(() => {
      for (let i = 0; i < 5; i++) res.write(chunk);
      res.end();
    });
  });
  try {
    const { host } = await routedShare(edge, hub, { target: big.url });
    const payload = randomBytes(size);
    const upload = await new Promise<{ status: number; json: any }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: edge.httpPort, method: 'POST', path: '/up', headers: { host, 'content-length': size } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString()) }));
      });
      req.on('error', reject);
      req.write(payload.subarray(0, 1024 * 1024));
      // the rest only after the target has seen the beginning: a buffering proxy would deadlock here
      void uploadSeen.then(() => req.end(payload.subarray(1024 * 1024)));
    });
    t.is(upload.status, 200);
    t.deepEqual(upload.json, { length: size, sha256: createHash('sha256').update(payload).digest('hex') });

    const downloaded = await new Promise<number>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: edge.httpPort, path: '/down', headers: { host } }, (res) => {
          let length = 0;
          res.on('data', (c: Buffer) => {
            if (length === 0) downloadRead();
            length += c.length;
          });
          res.on('end', () => resolve(length));
        })
        .on('error', reject);
    });
    t.is(downloaded, size);
  } finally {
    await big.close();
  }
});

test('a client that goes away takes its target request with it', async (t) => {
  let closedUpstream: () => void;
  const upstreamClosed = new Promise<void>((r) => (closedUpstream = r));
  let arrived: () => void;
  const requestArrived = new Promise<void>((r) => (arrived = r));
  const hanging = await startBackend((req, res) => {
    arrived();
    res.on('close', () => closedUpstream());
  });
  try {
    const { host } = await routedShare(edge, hub, { target: hanging.url });
    const socket = net.connect(edge.httpPort!, '127.0.0.1');
    socket.write(`GET /wait HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    await requestArrived;
    socket.destroy();
    await upstreamClosed;
    t.pass();
  } finally {
    await hanging.close();
  }
});

test('WebSocket upgrades are proxied (echo both ways, several messages)', async (t) => {
  const wsBackend = await startBackend((_req, res) => res.end('plain'));
  const wss = new WebSocketServer({ server: wsBackend.server });
  wss.on('connection', (socket, req) => {
    socket.send(`hello ${req.headers['x-forwarded-proto']}`);
    socket.on('message', (data) => socket.send(`echo:${data.toString()}`));
  });
  try {
    const { host, zId } = await routedShare(edge, hub, { target: wsBackend.url });
    const client = new WebSocket(`ws://127.0.0.1:${edge.httpPort}/chat`, { headers: { host } });
    const received: string[] = [];
    await new Promise<void>((resolve, reject) => {
      client.on('error', reject);
      client.on('message', (data) => {
        received.push(data.toString());
        if (received.length === 1) {
          client.send('one');
          client.send('two');
        }
        if (received.length === 3) resolve();
      });
    });
    t.deepEqual(received, ['hello http', 'echo:one', 'echo:two']);
    const socket = (client as unknown as { _socket: net.Socket })._socket;
    await new Promise<void>((resolve) => {
      client.once('close', () => resolve());
      client.close();
    });
    await new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));
    // the upgrade head, the 101 answer and every frame both ways are metered: exactly what crossed the client's socket
    await waitFor(
      async () => {
        await edge.meter.flush();
        const metrics = await hub.call('GET', `${hub.h}/shares/${zId}/metrics?range=PT1H`);
        const sum = (k: 'rx' | 'tx') => metrics.json.samples.reduce((n: number, p: Record<string, number>) => n + p[k], 0);
        return sum('rx') === socket.bytesWritten && sum('tx') === socket.bytesRead;
      },
      { what: 'WebSocket bytes metered exactly' },
    );
    t.true(socket.bytesWritten > 0 && socket.bytesRead > 0);
    // a plain request to the same target still works beside it
    t.is((await edgeRequest(edge.httpPort!, host)).text, 'plain');
  } finally {
    wss.close();
    await wsBackend.close();
  }
});

test('metering: exact request and response bytes of a raw exchange show in the share metrics after a flush', async (t) => {
  const meteredHub = await stack.hub();
  const fixed = await startBackend(async (req, res) => {
    await readBody(req);
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 1000 });
    res.end('z'.repeat(1000));
  });
  try {
    const { host, zId, json } = await routedShare(edge, meteredHub, { target: fixed.url });
    const body = 'q'.repeat(2500);
    const request = `POST /count HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    const received = await new Promise<number>((resolve, reject) => {
      const socket = net.connect(edge.httpPort!, '127.0.0.1', () => socket.write(request));
      let n = 0;
      socket.on('data', (d) => (n += d.length));
      socket.on('close', () => resolve(n));
      socket.on('error', reject);
    });
    t.true(received > 1000);
    await edge.meter.flush();
    const metrics = await meteredHub.call('GET', `${meteredHub.h}/shares/${zId}/metrics?range=PT1H`);
    t.is(metrics.status, 200);
    const totals = metrics.json.samples.reduce((s: { rx: number; tx: number }, p: { rx: number; tx: number }) => ({ rx: s.rx + p.rx, tx: s.tx + p.tx }), {
      rx: 0,
      tx: 0,
    });
    t.deepEqual(totals, { rx: Buffer.byteLength(request), tx: received });
    // the hub's and the environment's series carry the same bytes
    const hubMetrics = await meteredHub.call('GET', `${meteredHub.h}/metrics?range=PT1H`);
    t.is(
      hubMetrics.json.samples.reduce((n: number, p: { rx: number }) => n + p.rx, 0),
      Buffer.byteLength(request),
    );
    const envMetrics = await meteredHub.call('GET', `/hub/environments/${json.envZId}/metrics?duration=PT1H`);
    t.is(envMetrics.status, 200, envMetrics.text);
    t.is(
      envMetrics.json.samples.reduce((n: number, p: { tx: number }) => n + p.tx, 0),
      received,
    );
  } finally {
    await fixed.close();
  }
});

test.serial('the change feed reconnects after its connection is killed and reloads everything, so a change made meanwhile is not missed', async (t) => {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: stack.databaseUrl });
  await admin.connect();
  try {
    const killed = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'edgehub-edge-listen'`,
    );
    t.is(killed.rowCount, 1);
    // made while the edge is not listening: only the resync after the reconnect can find it
    const { host } = await routedShare(edge, hub, { target: backend.url });
    t.is((await edgeRequest(edge.httpPort!, host)).status, 200);
    await waitFor(
      async () =>
        (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'edgehub-edge-listen'`)).rowCount === 1,
      {
        what: 'the change feed listening again',
      },
    );
  } finally {
    await admin.end();
  }
});

test('Prometheus series of the edge: requests by frontend and status, bytes by direction, upstream errors', async (t) => {
  const { host, json } = await routedShare(edge, hub, { target: backend.url });
  t.is((await edgeRequest(edge.httpPort!, host)).status, 200);
  await edgeRequest(edge.httpPort!, 'nobody.share.localhost');
  const closed = await startBackend(() => undefined);
  await closed.close();
  const refused = await routedShare(edge, hub, { target: closed.url });
  t.is((await edgeRequest(edge.httpPort!, refused.host)).status, 502);
  const scrape = await stack.call('GET', '/metrics', { auth: stack.admin });
  t.is(scrape.status, 200);
  const frontend = json.frontendId;
  t.regex(scrape.text, new RegExp(`edgehub_edge_requests_total\\{[^}]*frontend="${frontend}"[^}]*status="200"[^}]*\\} \\d+`));
  t.regex(scrape.text, /edgehub_edge_requests_total\{[^}]*frontend="none"[^}]*status="404"/);
  t.regex(scrape.text, new RegExp(`edgehub_edge_bytes_total\\{[^}]*frontend="${frontend}"[^}]*direction="rx"[^}]*\\} [1-9]`));
  t.regex(scrape.text, new RegExp(`edgehub_edge_request_duration_seconds_bucket\\{[^}]*frontend="${frontend}"`));
  t.regex(scrape.text, new RegExp(`edgehub_edge_upstream_errors_total\\{[^}]*frontend="${frontend}"[^}]*kind="bad_gateway"`));
});
