/**
 * A hostile agent for tests: it has a real agent identity (enrolled), dials the edge as an agent does, takes its
 * targets like an honest one (so its connection is up), then writes one kind of HTTP/2 frame as fast as the
 * connection takes it: WINDOW_UPDATE, SETTINGS, PING or an unknown frame type on the connection, RST_STREAM,
 * PRIORITY or an empty DATA frame on a closed stream, or an endless header block (HEADERS without END_HEADERS, then
 * CONTINUATION frames) as its answer to the targets. Serving (`dialAsAgent(..., { serve: true })`), it also answers
 * the streams the edge opens to its share's target with a slow answer that never ends (an HTTP/1.1 response whose
 * body comes a few bytes at a time), so that a flood can run beside a stream in progress; there, EMPTY_DATA_OPEN
 * sends empty DATA frames on that stream, CONTINUATION an endless trailer block on it, and CONTINUATION_ALONE
 * CONTINUATION frames with no HEADERS before them (a protocol error).
 * Its side of HTTP/2 is a handful of hand-written frames, so the flood's frames go on a socket nobody else writes to.
 */
import http from 'node:http';
import tls from 'node:tls';
import { readIdentity } from '../../agent/lib/identity.js';
import { AGENT_ALPN } from 'edgehub-agent/protocol';

export type Flood =
  | 'WINDOW_UPDATE'
  | 'SETTINGS'
  | 'PING'
  | 'RST_STREAM'
  | 'CONTINUATION'
  | 'PRIORITY'
  | 'EMPTY_DATA'
  | 'EMPTY_DATA_OPEN'
  | 'UNKNOWN'
  | 'CONTINUATION_ALONE';

const frame = (type: number, flags: number, stream: number, payload: Buffer) => {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
};

/** A literal header `a: b` (not indexed): the payload of the endless header block's frames. */
const JUNK_HEADER = Buffer.from([0x40, 0x01, 0x61, 0x01, 0x62]);

/** 2000 frames of `kind`: `closed` is a stream that was answered and closed, `open` the stream of the endless block. */
function frames(kind: Flood, closed: number, open: number): Buffer {
  const one =
    kind === 'WINDOW_UPDATE'
      ? frame(0x8, 0, 0, Buffer.from([0, 0, 0, 1]))
      : kind === 'SETTINGS'
        ? frame(0x4, 0, 0, Buffer.alloc(0))
        : kind === 'PING'
          ? frame(0x6, 0, 0, Buffer.alloc(8, 7))
          : kind === 'RST_STREAM'
            ? frame(0x3, 0, closed, Buffer.from([0, 0, 0, 8]))
            : kind === 'PRIORITY'
              ? frame(0x2, 0, closed, Buffer.from([0, 0, 0, 0, 15]))
              : kind === 'EMPTY_DATA'
                ? frame(0x0, 0, closed, Buffer.alloc(0))
                : kind === 'EMPTY_DATA_OPEN'
                  ? frame(0x0, 0, open, Buffer.alloc(0))
                  : kind === 'UNKNOWN'
                    ? frame(0xfa, 0, 0, Buffer.alloc(8, 7))
                    : kind === 'CONTINUATION_ALONE'
                      ? frame(0x9, 0x4, open, JUNK_HEADER)
                      : frame(0x9, 0, open, JUNK_HEADER);
  return Buffer.concat(Array.from({ length: 2000 }, () => one));
}

export interface FloodResult {
  /** The targets were taken (the connection was up) before the flood. */
  up: boolean;
  /** Bytes of flood written. */
  sent: number;
  /** The edge closed the connection before the flood's time was up. */
  closedByEdge: boolean;
}

export interface AgentDial {
  socket: tls.TLSSocket;
  /** Whether the edge sent the targets (the connection is up), false when it closed the connection first. */
  up: boolean;
  closed: Promise<void>;
  /** The stream the targets came on (answered and closed unless `endless`). */
  targetsStream: number;
  /** Serving: the edge's stream to the share's target whose slow answer is in progress (0 before one). */
  held: number;
}

export interface DialOptions {
  /** Answer the targets with a header block that never ends (HEADERS without END_HEADERS). */
  endless?: boolean;
  /** Answer the edge's streams to the share's target with a slow answer that never ends. */
  serve?: boolean;
}

/**
 * Dials the edge at 127.0.0.1:`port` as the agent of `dir` and takes its targets (or, `endless`, starts an answer
 * that never ends). The agent's side of HTTP/2 is written by hand here (a few frames: the edge's preface is read
 * past, SETTINGS and its acknowledgement, `:status 204` and `:status 200` as one indexed header each), so that the
 * socket is this code's alone and the flood's frames can be written onto it.
 */
export async function dialAsAgent(dir: string, port: number, { endless = false, serve = false }: DialOptions = {}): Promise<AgentDial> {
  const identity = readIdentity(dir);
  const socket = tls.connect({
    host: '127.0.0.1',
    port,
    servername: identity.edgeServerName,
    ca: identity.edgeCaPem,
    cert: identity.certificatePem,
    key: identity.keyPem,
    ALPNProtocols: [AGENT_ALPN],
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const tlsUp = await new Promise<boolean>((resolve) => {
    socket.once('secureConnect', () => resolve(true));
    socket.once('close', () => resolve(false));
  });
  const dial: AgentDial = { socket, up: false, closed, targetsStream: 0, held: 0 };
  if (!tlsUp) return dial;
  socket.write(frame(0x4, 0, 0, Buffer.alloc(0))); // our SETTINGS: none
  const PREFACE = 24;
  let buffered = Buffer.alloc(0);
  let prefaceSeen = false;
  /** Streams answered `:status 200` at once (a stream to the target waits for it before it sends the request). */
  const answered = new Set<number>();
  const trickle = setInterval(() => {
    if (dial.held && !socket.destroyed) socket.write(frame(0x0, 0, dial.held, Buffer.from('c\r\nslow answer\n\r\n'))); // one chunk
  }, 100);
  void closed.then(() => clearInterval(trickle));
  dial.up = await new Promise<boolean>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!prefaceSeen) {
        if (buffered.length < PREFACE) return;
        buffered = buffered.subarray(PREFACE);
        prefaceSeen = true;
      }
      while (buffered.length >= 9) {
        const length = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + length) break;
        const type = buffered[3];
        const flags = buffered[4];
        const stream = buffered.readUInt32BE(5) & 0x7fffffff;
        const payload = buffered.subarray(9, 9 + length);
        buffered = buffered.subarray(9 + length);
        if (type === 0x4 && !(flags & 0x1)) socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0))); // SETTINGS ACK
        if (type === 0x6 && !(flags & 0x1)) socket.write(frame(0x6, 0x1, 0, Buffer.alloc(8))); // PING ACK
        const endStream = (type === 0x0 || type === 0x1) && flags & 0x1;
        if (serve && dial.targetsStream && type === 0x1 && !endStream) {
          socket.write(frame(0x1, 0x4, stream, Buffer.from([0x88]))); // :status 200, the stream stays open
          answered.add(stream);
          continue;
        }
        if (answered.has(stream) && type === 0x0 && !dial.held && /^[A-Z]+ \S+ HTTP\/1\.1\r\n/.test(payload.toString('latin1'))) {
          // the request to the target: a response whose body never ends, a few bytes every 100 ms
          dial.held = stream;
          socket.write(frame(0x0, 0, stream, Buffer.from('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n')));
          continue;
        }
        if (answered.has(stream) && endStream) {
          socket.write(frame(0x0, 0x1, stream, Buffer.alloc(0))); // a PUT answered 200 at once: ended
          continue;
        }
        if (!endStream) continue;
        // a request ended (the targets first, then the live edges): answered 204, or, endless, never finished
        if (!dial.targetsStream) {
          dial.targetsStream = stream;
          if (endless) {
            socket.write(frame(0x1, 0, stream, Buffer.from([0x88])));
            resolve(true);
            continue;
          }
          setTimeout(() => resolve(true), 50);
        }
        socket.write(frame(0x1, 0x5, stream, Buffer.from([0x89])));
      }
    });
    void closed.then(() => resolve(false));
  });
  return dial;
}

/** Floods the edge at 127.0.0.1:`port` with `kind` frames for at most `ms`, as the agent of `dir`. */
export async function flood(dir: string, port: number, kind: Flood, ms: number): Promise<FloodResult> {
  const dial = await dialAsAgent(dir, port, { endless: kind === 'CONTINUATION' });
  if (!dial.up) return { up: false, sent: 0, closedByEdge: true };
  return floodOn(dial, kind, ms);
}

/**
 * Floods on a connection that is up with `kind` frames for at most `ms`. Beside a slow answer in progress (`held`),
 * the endless header block is a trailer block on that stream; else it continues the targets' endless answer.
 */
export async function floodOn(dial: AgentDial, kind: Flood, ms: number): Promise<FloodResult> {
  const { socket, closed } = dial;
  const open = dial.held || dial.targetsStream;
  // the closed stream: the targets' (answered at once unless endless)
  const batch = frames(kind, dial.targetsStream, open);
  if (kind === 'CONTINUATION' && dial.held) socket.write(frame(0x1, 0x1, dial.held, JUNK_HEADER)); // trailers, END_HEADERS unset
  let sent = 0;
  let stop = false;
  const timer = setTimeout(() => (stop = true), ms);
  let edgeClosed = false;
  void closed.then(() => (edgeClosed = !stop));
  while (!stop && !socket.destroyed) {
    sent += batch.length;
    if (!socket.write(batch)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
  }
  clearTimeout(timer);
  const closedByEdge = edgeClosed || socket.destroyed;
  socket.destroy();
  return { up: true, sent, closedByEdge };
}

/** Latencies (ms) of `n` sequential requests to the edge at 127.0.0.1:`port` for `host`, over one kept-alive connection. */
export async function latencies(port: number, host: string, n: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', headers: { host }, agent }, (res) => {
          res.resume();
          res.once('end', () => resolve());
        })
        .once('error', reject);
    });
    out.push(performance.now() - started);
  }
  agent.destroy();
  return out;
}

export const p99 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)];
