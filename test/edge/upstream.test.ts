/**
 * The edge's own HTTP/1.1 client towards share targets (edge/upstream/upstream.ts): keep-alive reuse and its limits, the
 * answers a reverse proxy must frame right (HEAD, 204/304, 1xx, close-delimited, many headers), chunked uploads,
 * a target that answers early, one that closes a kept-alive connection under a request, and one that speaks nonsense.
 * Targets are node:http servers, or raw TCP servers where the exact bytes matter.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { edgeRequest, readBody, routedShare, startBackend, startTestEdge } from '../helpers/edge.js';
import { makeKey } from '../helpers/pki.js';
import { rawTarget as rawTargetOf } from '../helpers/raw.js';
import { type HubFixture, useStack } from '../helpers/stack.js';
import { assertRefused } from '../helpers/refusals.js';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '2000', HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  await edge?.stop(1000);
  for (const close of closers) await close().catch(() => undefined);
});
let edge: Edge;
let hub: HubFixture;
const closers: (() => Promise<void>)[] = [];

test.before(async () => {
  edge = await startTestEdge();
  hub = await stack.hub();
});

/** A node:http target that counts the connections it accepted. */
async function countingTarget(handler: http.RequestListener) {
  const backend = await startBackend(handler);
  closers.push(backend.close);
  let connections = 0;
  backend.server.on('connection', () => connections++);
  return { ...backend, connections: () => connections };
}

/** A raw TCP target (test/helpers/raw.ts), closed after the file's tests. */
async function rawTarget(answer: Parameters<typeof rawTargetOf>[0]) {
  const target = await rawTargetOf(answer);
  closers.push(target.close);
  return target;
}

const keepAliveAgent = () => new http.Agent({ keepAlive: true, maxSockets: 1 });

test('sequential requests reuse one target connection; a target Keep-Alive timeout of 1 s is honoured', async (t) => {
  const reused = await countingTarget((_req, res) => res.end('ok'));
  const { host } = await routedShare(edge, hub, { target: reused.url });
  for (let i = 0; i < 5; i++) t.is((await edgeRequest(edge.httpPort!, host, { path: `/r${i}` })).text, 'ok');
  t.is(reused.connections(), 1, 'five requests, one connection to the target');

  const short = await countingTarget((_req, res) => {
    res.setHeader('keep-alive', 'timeout=1');
    res.end('ok');
  });
  const other = await routedShare(edge, hub, { target: short.url });
  for (let i = 0; i < 3; i++) t.is((await edgeRequest(edge.httpPort!, other.host)).text, 'ok');
  t.is(short.connections(), 3, 'a connection the target keeps for 1 s is not reused by the edge');
});

test('HEAD, 204 and 304 answers carry no body, and the connection serves the next request', async (t) => {
  const target = await countingTarget((req, res) => {
    if (req.url === '/no-content') return void res.writeHead(204).end();
    if (req.url === '/not-modified') return void res.writeHead(304, { etag: '"v1"' }).end();
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 11 });
    res.end(req.method === 'HEAD' ? undefined : 'hello world');
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  const agent = keepAliveAgent();
  const head = await edgeRequest(edge.httpPort!, host, { method: 'HEAD', agent });
  t.is(head.status, 200);
  t.is(head.headers['content-length'], '11');
  t.is(head.body.length, 0);
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/no-content', agent })).status, 204);
  const notModified = await edgeRequest(edge.httpPort!, host, { path: '/not-modified', agent });
  t.is(notModified.status, 304);
  t.is(notModified.headers.etag, '"v1"');
  const after = await edgeRequest(edge.httpPort!, host, { agent });
  t.is(after.text, 'hello world', 'no bodyless answer left bytes that the next answer would be read from');
  // undici's pool waits one event-loop turn before reusing a connection, so a request sent at once may open another
  t.true(target.connections() <= 4);
  agent.destroy();
});

test('1xx answers before the final one are consumed; a body delimited by the connection end arrives whole', async (t) => {
  const target = await rawTarget((head, _i, socket) => {
    if (head.startsWith('GET /hints ')) {
      socket.write('HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n');
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello');
    } else {
      socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n' + 'x'.repeat(100_000));
    }
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  const hinted = await edgeRequest(edge.httpPort!, host, { path: '/hints' });
  t.is(hinted.status, 200);
  t.is(hinted.text, 'hello');
  const agent = keepAliveAgent();
  const closeDelimited = await edgeRequest(edge.httpPort!, host, { path: '/until-close', agent });
  agent.destroy();
  t.is(closeDelimited.status, 200);
  t.is(closeDelimited.body.length, 100_000);
  t.is(closeDelimited.headers.connection, 'keep-alive', "the target's connection: close is hop-by-hop");
});

test('a target that closes a kept-alive connection under a GET: sent again on a new one; a POST with a body is a 502', async (t) => {
  // answers the first request of each connection, then drops the connection when the second arrives
  const seen: string[] = [];
  const target = await rawTarget((head, index, socket) => {
    seen.push(head.split(' ')[0]);
    if (index === 0) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
    else socket.destroy();
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  t.is((await edgeRequest(edge.httpPort!, host)).text, 'ok');
  const post = await edgeRequest(edge.httpPort!, host, { method: 'POST', body: 'data', headers: { 'content-type': 'text/plain' } });
  t.is(post.status, 502, 'a request with a body is never sent twice');
  t.like(post.json, { error: 'bad_gateway' });
  t.is(seen.filter((m) => m === 'POST').length, 1, 'the target saw the POST once');
  t.is((await edgeRequest(edge.httpPort!, host)).text, 'ok');
  const again = await edgeRequest(edge.httpPort!, host);
  t.is(again.status, 200, 'the GET met the dropped connection and was sent once more');
  t.is(again.text, 'ok');
});

test('an answer that is not HTTP is a 502 JSON answer', async (t) => {
  const target = await rawTarget((_head, _i, socket) => socket.end('SSH-2.0-OpenSSH_9.2\r\n\r\n'));
  const { host } = await routedShare(edge, hub, { target: target.url });
  const answer = await edgeRequest(edge.httpPort!, host);
  assertRefused(t, answer, 502, 'bad_gateway', 'EH_TARGET_UNREACHABLE');
});

test('many headers both ways keep their order and duplicates', async (t) => {
  let seen: string[] = [];
  const target = await countingTarget((req, res) => {
    seen = req.rawHeaders;
    for (let i = 0; i < 60; i++) res.setHeader(`x-answer-${i}`, String(i));
    res.setHeader(
      'set-cookie',
      Array.from({ length: 40 }, (_, i) => `c${i}=${i}; Path=/`),
    );
    res.end('ok');
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  const headers = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`x-request-${i}`, `v${i}`]));
  const answer = await edgeRequest(edge.httpPort!, host, { headers });
  t.is(answer.status, 200);
  for (let i = 0; i < 60; i++) t.is(answer.headers[`x-answer-${i}`], String(i));
  t.deepEqual(
    answer.headers['set-cookie'],
    Array.from({ length: 40 }, (_, i) => `c${i}=${i}; Path=/`),
  );
  const names = seen.filter((_, i) => i % 2 === 0 && seen[i].startsWith('x-request-'));
  t.deepEqual(
    names,
    Array.from({ length: 80 }, (_, i) => `x-request-${i}`),
  );
});

test('a chunked upload reaches the target whole and chunked; a target that answers before reading it ends the exchange cleanly', async (t) => {
  const target = await countingTarget(async (req, res) => {
    if (req.url === '/too-large') {
      // answers at once and drains the rest (a target that closes with the upload unread makes its kernel reset the
      // connection, which can discard its own answer before anyone reads it: TCP, not the edge)
      req.resume();
      res.writeHead(413, { 'content-type': 'text/plain' });
      return void res.end('too large');
    }
    const body = await readBody(req);
    res.end(JSON.stringify({ te: req.headers['transfer-encoding'] ?? null, length: body.length, sum: body.reduce((a, b) => (a + b) % 65521, 0) }));
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  const payload = Buffer.alloc(300_000, 7);
  const chunked = await new Promise<{ status: number; json: any }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: edge.httpPort, method: 'POST', path: '/upload', headers: { host }, agent: false }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    for (let i = 0; i < payload.length; i += 50_000) req.write(payload.subarray(i, i + 50_000));
    req.end();
  });
  t.is(chunked.status, 200);
  t.deepEqual(chunked.json, { te: 'chunked', length: payload.length, sum: payload.reduce((a, b) => (a + b) % 65521, 0) });

  const early = await edgeRequest(edge.httpPort!, host, { method: 'POST', path: '/too-large', body: Buffer.alloc(2_000_000, 1) });
  t.is(early.status, 413);
  t.is(early.text, 'too large');
  const next = await edgeRequest(edge.httpPort!, host, { method: 'POST', path: '/upload', body: 'abc' });
  t.is(next.status, 200);
  t.like(next.json, { length: 3 });
});

test('a target that sends bytes on an idle connection loses that connection, not the next request', async (t) => {
  const target = await rawTarget((_head, index, socket) => {
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
    if (index === 0) setTimeout(() => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nstale'), 50);
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  t.is((await edgeRequest(edge.httpPort!, host)).text, 'ok');
  await new Promise((r) => setTimeout(r, 200));
  const next = await edgeRequest(edge.httpPort!, host);
  t.is(next.text, 'ok', 'the unsolicited answer never reaches a client');
  t.is(target.connections(), 2);
});

test('an https target is reached over TLS and its certificate is verified: a self-signed one is a 502 naming the reason', async (t) => {
  const keyFile = await makeKey('ec256');
  const { stdout: cert } = await promisify(execFile)('openssl', [
    'req',
    '-new',
    '-x509',
    '-key',
    keyFile,
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-days',
    '1',
  ]);
  let reached = 0;
  const server = https.createServer({ key: readFileSync(keyFile), cert }, (_req, res) => {
    reached++;
    res.end('secret');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { host } = await routedShare(edge, hub, { target: `https://127.0.0.1:${(server.address() as AddressInfo).port}` });
  const answer = await edgeRequest(edge.httpPort!, host);
  // the message names why TLS with the target failed
  assertRefused(t, answer, 502, 'bad_gateway', 'EH_TARGET_UNREACHABLE', 'SELF_SIGNED');
  t.is(reached, 0, 'no request was sent to a target whose certificate failed');
});

test("an https target is asked for its own name (TLS SNI), never the share's public name from the Host header; an address target for none", async (t) => {
  const keyFile = await makeKey('ec256');
  const { stdout: cert } = await promisify(execFile)('openssl', [
    'req',
    '-new',
    '-x509',
    '-key',
    keyFile,
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-days',
    '1',
  ]);
  const names: string[] = [];
  let handshakes = 0;
  const server = https.createServer(
    {
      key: readFileSync(keyFile),
      cert,
      // called only when the client sent a name
      SNICallback: (name, done) => {
        names.push(name);
        done(null, undefined as never);
      },
    },
    (_req, res) => res.end('secret'),
  );
  server.on('connection', () => handshakes++);
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;

  const byName = await routedShare(edge, hub, { target: `https://localhost:${port}` });
  const answer = await edgeRequest(edge.httpPort!, byName.host);
  // the certificate is self-signed, so the exchange still fails: what matters is the name the target was asked for
  t.is(answer.status, 502);
  t.deepEqual([...new Set(names)], ['localhost'], `the target saw ${JSON.stringify(names)}, the share is ${byName.host}`);

  names.length = 0;
  const before = handshakes;
  const byAddress = await routedShare(edge, hub, { target: `https://127.0.0.1:${port}` });
  t.is((await edgeRequest(edge.httpPort!, byAddress.host)).status, 502);
  t.true(handshakes > before, 'the address target was connected to');
  t.deepEqual(names, [], 'no name is sent to an address');
});

test('an upload slower than the answer timeout is not cut off: the deadline runs from the last byte sent', async (t) => {
  const target = await countingTarget(async (req, res) => res.end(String((await readBody(req)).length)));
  const { host } = await routedShare(edge, hub, { target: target.url });
  const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: edge.httpPort, method: 'POST', path: '/slow-upload', headers: { host, 'content-length': 8 * 1000 }, agent: false },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    let sent = 0;
    // 8 pieces 400 ms apart: 2.8 s in all, beyond the 2 s answer timeout of this edge
    const timer = setInterval(() => {
      req.write(Buffer.alloc(1000, 1));
      if (++sent === 8) {
        clearInterval(timer);
        req.end();
      }
    }, 400);
  });
  t.is(answer.status, 200);
  t.is(answer.text, '8000');
});
