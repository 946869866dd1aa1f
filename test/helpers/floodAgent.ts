/**
 * A hostile agent for tests: it has a real agent identity (enrolled), dials the edge as an agent does, takes its
 * targets like an honest one (so its connection is up), then writes one kind of HTTP/2 frame as fast as the
 * connection takes it: WINDOW_UPDATE, SETTINGS or PING on the connection, RST_STREAM on a closed stream, or an
 * endless header block (HEADERS without END_HEADERS, then CONTINUATION frames) as its answer to the targets.
 * Its side of HTTP/2 is a handful of hand-written frames, so the flood's frames go on a socket nobody else writes to.
 */
import tls from 'node:tls';
import { readIdentity } from '../../agent/lib/identity.js';
import { AGENT_ALPN } from '../../agent/lib/protocol.js';

export type Flood = 'WINDOW_UPDATE' | 'SETTINGS' | 'PING' | 'RST_STREAM' | 'CONTINUATION';

const frame = (type: number, flags: number, stream: number, payload: Buffer) => {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
};

function frames(kind: Flood, stream: number): Buffer {
  const one =
    kind === 'WINDOW_UPDATE'
      ? frame(0x8, 0, 0, Buffer.from([0, 0, 0, 1]))
      : kind === 'SETTINGS'
        ? frame(0x4, 0, 0, Buffer.alloc(0))
        : kind === 'PING'
          ? frame(0x6, 0, 0, Buffer.alloc(8, 7))
          : kind === 'RST_STREAM'
            ? frame(0x3, 0, stream, Buffer.from([0, 0, 0, 8]))
            : frame(0x9, 0, stream, Buffer.from([0x40, 0x01, 0x61, 0x01, 0x62]));
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
  /** The stream the targets came on. */
  targetsStream: number;
}

/**
 * Dials the edge at 127.0.0.1:`port` as the agent of `dir` and takes its targets (or, `endless`, starts an answer
 * that never ends). The agent's side of HTTP/2 is written by hand here (a few frames: the edge's preface is read
 * past, SETTINGS and its acknowledgement, `:status 204` as one indexed header), so that the socket is this code's
 * alone and the flood's frames can be written onto it.
 */
export async function dialAsAgent(dir: string, port: number, endless = false): Promise<AgentDial> {
  const identity = readIdentity(dir);
  const socket = tls.connect({ host: '127.0.0.1', port, servername: identity.edgeServerName, ca: identity.edgeCaPem, cert: identity.certificatePem, key: identity.keyPem, ALPNProtocols: [AGENT_ALPN] });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const tlsUp = await new Promise<boolean>((resolve) => {
    socket.once('secureConnect', () => resolve(true));
    socket.once('close', () => resolve(false));
  });
  const dial: AgentDial = { socket, up: false, closed, targetsStream: 0 };
  if (!tlsUp) return dial;
  socket.write(frame(0x4, 0, 0, Buffer.alloc(0))); // our SETTINGS: none
  const PREFACE = 24;
  let buffered = Buffer.alloc(0);
  let prefaceSeen = false;
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
        buffered = buffered.subarray(9 + length);
        if (type === 0x4 && !(flags & 0x1)) socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0))); // SETTINGS ACK
        if (type === 0x6 && !(flags & 0x1)) socket.write(frame(0x6, 0x1, 0, Buffer.alloc(8))); // PING ACK
        const endStream = (type === 0x0 || type === 0x1) && flags & 0x1;
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
  const dial = await dialAsAgent(dir, port, kind === 'CONTINUATION');
  const { socket, closed } = dial;
  if (!dial.up) return { up: false, sent: 0, closedByEdge: true };
  const batch = frames(kind, dial.targetsStream);
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
