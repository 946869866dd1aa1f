/**
 * WebSockets to a share with `targetProtocol: "h2"`, from a raw socket client speaking HTTP/1.1: carried as an
 * extended CONNECT stream (RFC 8441) to a target that allows it (SETTINGS_ENABLE_CONNECT_PROTOCOL): 101 with the
 * Sec-WebSocket-Accept of the client's key, the target seeing `:protocol: websocket` and the subprotocols asked for,
 * bytes echoed both ways, metered. A target that does not allow extended CONNECT: 501 `not_implemented` as a JSON
 * error, and the connection closes; the target sees no stream. A target that declines the stream (any status but
 * 200): its answer goes back as it is, and the connection closes.
 */
import { createHash, randomBytes } from 'node:crypto';
import http2, { type IncomingHttpHeaders } from 'node:http2';
import net from 'node:net';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import type { UsageRow } from '../../shared/metrics/store.js';
import { publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000', HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000' } });
const stored: UsageRow[] = [];
const cleanups: (() => Promise<unknown>)[] = [];
let edge: Edge;
let hub: HubFixture;
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
});

test.before(async () => {
  edge = await startTestEdge({ store: async (rows) => void stored.push(...rows) });
  hub = await stack.hub({ name: 'h2-ws' });
  await publicFrontendCertificate(stack.databaseUrl);
});

/** A cleartext HTTP/2 target; with `connect`, it allows extended CONNECT and echoes each WebSocket stream. */
async function h2Target(connect: boolean): Promise<{ port: number; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = http2.createServer({ settings: { enableConnectProtocol: connect } });
  server.on('stream', (stream, headers) => {
    seen.push(headers);
    stream.on('error', () => undefined);
    if (headers[':method'] !== 'CONNECT') return void stream.respond({ ':status': 404 }, { endStream: true });
    if (headers[':path'] === '/declined') {
      // a refusal with a body, and a header only the edge may set on its own answers
      stream.respond({ ':status': 403, 'content-type': 'text/plain', 'x-reason': 'room closed', 'edgehub-error-code': 'EH_FAKE' });
      return void stream.end('room closed');
    }
    stream.respond({
      ':status': 200,
      'sec-websocket-protocol': String(headers['sec-websocket-protocol'] ?? '')
        .split(',')[0]!
        .trim(),
    });
    stream.pipe(stream);
  });
  server.on('sessionError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { port: (server.address() as net.AddressInfo).port, seen };
}

/** An upgrade request on a raw socket: resolves with the answer head, the socket and what followed the head. */
function upgrade(host: string, key: string, path = '/chat?room=1'): Promise<{ head: string; socket: net.Socket; rest: Buffer; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: edge.httpPort! });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    let got = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      resolve({ head: got.subarray(0, end).toString('latin1'), socket, rest: got.subarray(end + 4), closed });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Protocol: chat, superchat\r\n\r\n`,
    );
  });
}

/** Reads from `socket` until `n` bytes (after `already`) have come. */
function readBytes(socket: net.Socket, n: number, already: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    let got = already;
    if (got.length >= n) return resolve(got);
    const onData = (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= n) {
        socket.off('data', onData);
        resolve(got);
      }
    };
    socket.on('data', onData);
  });
}

test.serial(
  'a WebSocket to an HTTP/2 target that allows extended CONNECT: 101 with the accept of its key, :protocol websocket, bytes both ways, metered',
  async (t) => {
    const target = await h2Target(true);
    const { zId, host } = await routedShare(edge, hub, { target: `http://127.0.0.1:${target.port}`, targetProtocol: 'h2' });
    const key = randomBytes(16).toString('base64');
    const { head, socket, rest } = await upgrade(host, key);
    t.regex(head, /^HTTP\/1\.1 101 /);
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    t.regex(head, new RegExp(`\\r\\nsec-websocket-accept: ${accept.replace(/[+/=]/g, '\\$&')}\\r?(\\n|$)`, 'i'));
    t.regex(head, /\r\nsec-websocket-protocol: chat\r?(\n|$)/i);
    t.regex(head, /\r\nupgrade: websocket/i);

    const stream = target.seen.at(-1)!;
    t.is(stream[':method'], 'CONNECT');
    t.is(stream[':protocol'], 'websocket');
    t.is(stream[':path'], '/chat?room=1');
    t.is(stream['sec-websocket-protocol'], 'chat, superchat');
    t.is(stream['sec-websocket-key'], undefined, 'no key over HTTP/2');

    // what the client sends comes back (the target echoes the stream), 1 MiB byte-exact
    const data = randomBytes(1 << 20);
    socket.write(data);
    const back = await readBytes(socket, data.length, rest);
    t.true(back.equals(data));
    socket.end();
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await edge.meter.flush();
    const metered = await waitFor(async () => stored.find((r) => r.shareId === zId && r.rx >= data.length && r.tx >= data.length), {
      timeoutMs: 5000,
      what: 'the WebSocket metered',
    });
    t.truthy(metered);
  },
);

test.serial(
  'a WebSocket to an HTTP/2 target that does not allow extended CONNECT: 501 not_implemented as JSON, the connection closed, no stream at the target',
  async (t) => {
    const target = await h2Target(false);
    const { host } = await routedShare(edge, hub, { target: `http://127.0.0.1:${target.port}`, targetProtocol: 'h2' });
    const { head, socket, rest, closed } = await upgrade(host, randomBytes(16).toString('base64'));
    t.regex(head, /^HTTP\/1\.1 501 /);
    t.regex(head, /content-type: application\/json/i);
    t.regex(head, /edgehub-error-code: EH_UPGRADE_NOT_SUPPORTED_BY_TARGET/i);
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
    const body = JSON.parse((await readBytes(socket, length, rest)).subarray(0, length).toString());
    t.is(body.error, 'not_implemented');
    t.regex(body.message, /extended CONNECT/);
    await closed;
    t.is(target.seen.length, 0);
  },
);

test.serial(
  "a WebSocket the HTTP/2 target declines: its status, headers and body go back as it answered (never the edge's own code header), then the connection closes",
  async (t) => {
    const target = await h2Target(true);
    const { host } = await routedShare(edge, hub, { target: `http://127.0.0.1:${target.port}`, targetProtocol: 'h2' });
    const { head, socket, rest, closed } = await upgrade(host, randomBytes(16).toString('base64'), '/declined');
    t.regex(head, /^HTTP\/1\.1 403 Forbidden\r\n/);
    t.regex(head, /\r\nx-reason: room closed\r?(\n|$)/i);
    t.regex(head, /\r\nconnection: close\r?(\n|$)/i);
    t.notRegex(head, /edgehub-error-code/i, "a target's answer never carries the edge's code header");
    t.notRegex(head, /sec-websocket-accept|upgrade:/i);
    let body = rest;
    socket.on('data', (d: Buffer) => (body = Buffer.concat([body, d])));
    await closed;
    t.is(body.toString(), 'room closed');
    t.is(target.seen.at(-1)![':protocol'], 'websocket');
  },
);
