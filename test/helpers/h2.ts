/**
 * HTTP/2 clients for the edge's TLS listener: node:http2 for well-formed requests (any :authority, client
 * certificates), and a raw writer of frames (literal HPACK fields, no Huffman) for what node:http2 refuses to send:
 * connection-specific fields, floods of resets, PINGs, SETTINGS and CONTINUATION frames.
 */
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import tls, { type TLSSocket } from 'node:tls';

export interface H2Options {
  servername: string;
  cert?: string;
  key?: string;
}

/** A session to the edge at 127.0.0.1:port with SNI `servername` (the edge's certificate is not verified here). */
export function h2Session(port: number, options: H2Options): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://127.0.0.1:${port}`, {
      servername: options.servername,
      rejectUnauthorized: false,
      cert: options.cert,
      key: options.key,
    });
    session.once('connect', () => {
      session.off('error', reject);
      session.on('error', () => undefined);
      resolve(session);
    });
    session.once('error', reject);
  });
}

export interface H2Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text: string;
  json: any;
  /** The stream's RST_STREAM code when it was reset, else 0. */
  rstCode: number;
  /** The header fields as sent (with what node:http2 added). */
  sent: OutgoingHttpHeaders;
}

/** One request on `session`; `headers` may name :authority and any field. */
export function h2Request(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string | Buffer | Buffer[]): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const method = String(headers[':method'] ?? 'GET');
    const stream = session.request({ ':method': method, ':path': '/', ...headers }, { endStream: body === undefined });
    const chunks: Buffer[] = [];
    let status = 0;
    let answerHeaders: IncomingHttpHeaders = {};
    stream.on('response', (h) => {
      status = Number(h[':status']);
      answerHeaders = h;
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => undefined);
    stream.on('close', () => {
      const buffer = Buffer.concat(chunks);
      const text = buffer.toString();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      if (!status && !stream.rstCode) return reject(new Error('the stream closed without an answer'));
      resolve({ status, headers: answerHeaders, body: buffer, text, json, rstCode: stream.rstCode ?? 0, sent: stream.sentHeaders });
    });
    if (body !== undefined) {
      if (Array.isArray(body)) {
        for (const piece of body) stream.write(piece);
        stream.end();
      } else stream.end(body);
    }
  });
}

// ---- raw frames ----

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, CONTINUATION: 9 } as const;
export const FLAG = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 } as const;

export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK integer with an N-bit prefix (RFC 7541 5.1). */
function integer(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) + 128);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** A header block of literal fields without indexing (RFC 7541 6.2.2), names and values as given. */
export function headerBlock(fields: [string, string][]): Buffer {
  const bytes: number[] = [];
  for (const [name, value] of fields) {
    bytes.push(0x00);
    bytes.push(...integer(Buffer.byteLength(name), 7, 0), ...Buffer.from(name));
    bytes.push(...integer(Buffer.byteLength(value), 7, 0), ...Buffer.from(value));
  }
  return Buffer.from(bytes);
}

export interface RawH2 {
  socket: TLSSocket;
  /** Frames received so far (type, flags, stream, payload). */
  frames: { type: number; flags: number; stream: number; payload: Buffer }[];
  send(...frames: Buffer[]): boolean;
  /** Resolves when the connection closed (by either side). */
  closed: Promise<void>;
  /** The first frame matching, now or later (rejects when the connection closes first). */
  next(
    match: (f: { type: number; flags: number; stream: number; payload: Buffer }) => boolean,
    timeoutMs?: number,
  ): Promise<{ type: number; flags: number; stream: number; payload: Buffer }>;
}

/** A TLS connection with ALPN h2 that has sent the preface and an empty SETTINGS frame. */
export function rawH2(port: number, servername: string): Promise<RawH2> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ALPNProtocols: ['h2'], rejectUnauthorized: false });
    const frames: RawH2['frames'] = [];
    const waiters: { match: (f: RawH2['frames'][number]) => boolean; resolve: (f: RawH2['frames'][number]) => void; reject: (e: Error) => void }[] = [];
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 9) {
        const length = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + length) break;
        const f = { type: buffered[3], flags: buffered[4], stream: buffered.readUInt32BE(5) & 0x7fffffff, payload: buffered.subarray(9, 9 + length) };
        buffered = buffered.subarray(9 + length);
        frames.push(f);
        for (const w of [...waiters]) {
          if (w.match(f)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(f);
          }
        }
      }
    });
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) =>
      socket.once('close', () => {
        for (const w of waiters.splice(0)) w.reject(new Error('the connection closed'));
        r();
      }),
    );
    socket.once('secureConnect', () => {
      if (socket.alpnProtocol !== 'h2') return reject(new Error(`ALPN gave ${socket.alpnProtocol}`));
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(FRAME.SETTINGS, 0, 0)]));
      resolve({
        socket,
        frames,
        closed,
        send: (...f) => !socket.destroyed && socket.write(Buffer.concat(f)),
        next: (match, timeoutMs = 5000) =>
          new Promise((res, rej) => {
            const found = frames.find(match);
            if (found) return res(found);
            if (socket.destroyed) return rej(new Error('the connection closed'));
            const timer = setTimeout(() => rej(new Error('no such frame in time')), timeoutMs);
            waiters.push({ match, resolve: (f) => (clearTimeout(timer), res(f)), reject: (e) => (clearTimeout(timer), rej(e)) });
          }),
      });
    });
    socket.once('error', reject);
  });
}

/** The HEADERS frame of a GET on `streamId` with extra literal fields. */
export function getHeaders(
  streamId: number,
  authority: string,
  extra: [string, string][] = [],
  flags = FLAG.END_STREAM | FLAG.END_HEADERS,
  path = '/',
): Buffer {
  return frame(FRAME.HEADERS, flags, streamId, headerBlock([[':method', 'GET'], [':scheme', 'https'], [':path', path], [':authority', authority], ...extra]));
}
