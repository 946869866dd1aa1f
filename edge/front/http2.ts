/**
 * HTTP/2 for clients on the edge's TLS listener (ALPN `h2`), on node:http2 (nghttp2 frames and parses; nothing
 * here does). A connection that negotiated `h2` is handed to a plain node:http2 server, whose compatibility API
 * turns each stream into a request/response pair that the edge's one request handler serves as it serves HTTP/1.1:
 * routing, mutual TLS, login, limits, proxying.
 *
 * What HTTP/2 adds is checked here, before the handler sees a request:
 * - `:authority` is the routing host; a `host` field that names another host makes the request malformed (400).
 *   The pseudo-header fields are taken out of the raw header lines, `host` is set from `:authority`, and cookie
 *   fields sent as several lines are joined with "; ", so the target sees what an HTTP/1.1 client would have sent.
 *   (Connection-specific fields and a `te` other than "trailers" never arrive: nghttp2 refuses them as a stream error.)
 * - Attacks on HTTP/2 itself are refused per connection: at most 100 concurrent streams (more are refused, and a
 *   client that keeps opening them is sent away), header lists up to 16 KiB and 128 fields, and rates kept per
 *   connection (rate-limiter-flexible, fixed windows): streams the client resets (CVE-2023-44487, "rapid reset"), PING and SETTINGS
 *   frames. A connection over any of them gets GOAWAY ENHANCE_YOUR_CALM and is closed. CONTINUATION floods are cut by
 *   nghttp2 itself (at most 8 CONTINUATION frames per header block), invalid frames after 100.
 * - The offending connection is the one closed. Its address is penalised for HTTP/2 only, for a while that doubles
 *   with each strike: its new connections that offer `h2` are refused before the TLS handshake (edge/front/front.ts reads
 *   their ClientHello), while its HTTP/1.1 clients and agents (their own ALPN protocol, admitted by certificate) go
 *   on as before: a client behind the same NAT or load balancer as an attacker loses HTTP/2 for seconds at most, an
 *   agent nothing. Behind a load balancer, HUB_EDGE_TRUSTED_PROXIES makes the address the client's own.
 *
 * Metering: a stream is metered on its own (a connection may carry streams of several shares at once): its header
 * fields as HTTP/1.1 would write them (`name: value` and CRLF, pseudo-fields included) and its DATA bytes, each way,
 * counted by the request and response classes the server is given (CountedRequest, CountedResponse). Nothing is put
 * on a stream per request: under HTTP/2 load the streams in flight are what each young-generation collection copies,
 * and a closure added to each made the collector's work per request three times HTTP/1.1's.
 */
import http2, {
  type Http2ServerRequest,
  type Http2Session,
  type Http2Stream,
  type IncomingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex, ReadableOptions } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { backoffMs } from '../../shared/backoff.js';
import { answer } from '../answers.js';
import type { Meter } from '../meter.js';
import { routingHost } from '../state/routes.js';
import type { ShareRoute } from '../types.js';

const H2_LIMITS = {
  /** Concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: 100,
  /** Uncompressed size of a header list (the same 16 KiB node's HTTP/1.1 parser takes). */
  maxHeaderListSize: 16 * 1024,
  maxHeaderListPairs: 128,
  /** Streams the client may reset: a burst in a window of burst / perSecond seconds. */
  resets: { burst: 100, perSecond: 10 },
  pings: { burst: 20, perSecond: 5 },
  settings: { burst: 20, perSecond: 2 },
  /** Requests refused for their header list (over maxHeaderListSize): a burst per burst / perSecond seconds. */
  refusals: { burst: 10, perSecond: 1 },
  /** A connection with no stream open and no frame for this long is closed. */
  idleMs: 120_000,
  /** An address whose connection was sent away refuses new TLS connections this long, doubling per strike. */
  penaltyMs: { first: 250, max: 5_000, forgetMs: 30_000 },
};

/**
 * Addresses whose HTTP/2 connections were sent away for abuse: their new connections that offer HTTP/2 are refused
 * before the handshake (which costs more than the abuse the edge just stopped) for a while that doubles with each
 * strike.
 */
class Penalties {
  private readonly strikes = new Map<string, { count: number; until: number; at: number }>();
  constructor(private readonly o: { first: number; max: number; forgetMs: number }) {}
  strike(address: string | undefined): void {
    if (!address) return;
    const now = Date.now();
    const previous = this.strikes.get(address);
    const count = previous && now - previous.at < this.o.forgetMs ? previous.count + 1 : 1;
    this.strikes.set(address, { count, at: now, until: now + backoffMs(count, { minMs: this.o.first, maxMs: this.o.max }) });
    if (this.strikes.size > 100_000) for (const [a, p] of this.strikes) if (now - p.at >= this.o.forgetMs) this.strikes.delete(a);
  }
  /** How long `address` stays penalised (ms; 0: not penalised). */
  left(address: string | undefined): number {
    const p = address ? this.strikes.get(address) : undefined;
    return p ? Math.max(0, p.until - Date.now()) : 0;
  }
}

/**
 * One of a connection's rates: `burst` events in a window of `burst / perSecond` seconds (rate-limiter-flexible's
 * fixed window, one limiter per kind for every connection, keyed by the connection). `take(key, over)` calls `over`
 * once the window's burst is spent; the verdict comes a microtask later, which node:http2 leaves room for: it runs
 * microtasks between the frames of one read, so no frame after the one over the rate is handled before `over`.
 */
function rate(r: { burst: number; perSecond: number }): (key: string, over: () => void) => void {
  const limiter = new RateLimiterMemory({ points: r.burst, duration: r.burst / r.perSecond });
  return (key, over) => void limiter.consume(key).catch(over);
}

/** Bytes of header fields written as HTTP/1.1 lines (`name: value\r\n`). */
function headBytes(headers: Record<string, unknown> | undefined): number {
  if (!headers) return 0;
  let n = 0;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) n += name.length + String(v).length + 4;
    else n += name.length + String(value).length + 4;
  }
  return n;
}

/**
 * The compatibility API's request, counting what the edge meters: its header fields as received (the raw lines) and
 * the DATA bytes it receives. node:http2 takes the class as a server option; counting in the class, not in closures
 * put on each stream, keeps a stream's objects as node:http2 makes them (a stream is the edge's most numerous object
 * under HTTP/2 load, and every byte it carries is copied by each collection it lives through).
 */
class CountedRequest extends http2.Http2ServerRequest {
  /** Header bytes as HTTP/1.1 lines, then DATA bytes received. */
  rx: number;
  constructor(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, options: ReadableOptions, rawHeaders: readonly string[]) {
    super(stream, headers, options, rawHeaders);
    let head = 0;
    for (let i = 0; i < rawHeaders.length; i += 2) head += rawHeaders[i].length + rawHeaders[i + 1].length + 4;
    this.rx = head;
  }
  override push(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk) this.rx += (chunk as Buffer).length;
    return super.push(chunk, encoding);
  }
}

/**
 * The compatibility API's response, counting the DATA bytes the edge sends (`end` writes its chunk through `write`)
 * and leaving out a status message: HTTP/2 has no reason phrase.
 */
class CountedResponse extends http2.Http2ServerResponse<CountedRequest> {
  tx = 0;
  override write(chunk: string | Uint8Array, encoding?: BufferEncoding | ((err: Error) => void), cb?: (err: Error) => void): boolean {
    // what reaches the stream: not a write after the end or on a closed stream (refused), nor a HEAD answer's body
    if (chunk != null && !this.writableEnded && !this.stream.destroyed && this.req.method !== 'HEAD') {
      this.tx += typeof chunk === 'string' ? Buffer.byteLength(chunk, typeof encoding === 'string' ? encoding : 'utf8') : chunk.length;
    }
    return super.write(chunk, encoding as BufferEncoding, cb);
  }
  /** writeHead(status, headers) or writeHead(status, message, headers), the message (HTTP/1.1's reason phrase) unused. */
  override writeHead(status: number, message?: unknown, headers?: unknown): this {
    return super.writeHead(status, (headers ?? (typeof message === 'object' ? message : undefined)) as OutgoingHttpHeaders);
  }
}

const ignore = (): void => undefined;

/** Whether a request arrived over HTTP/2 (the compatibility API's request). */
const isHttp2 = (req: IncomingMessage): boolean => req.httpVersionMajor === 2;

/** The HTTP/2 stream of a request that arrived over HTTP/2. */
const streamOf = (req: IncomingMessage): Http2Stream => (req as unknown as Http2ServerRequest).stream;

/**
 * Whether the answer went out whole. Over HTTP/2 a stream reset by the client also counts as finished writing, so
 * what tells is whether the answer was ended.
 */
export const answered = (req: IncomingMessage, res: ServerResponse): boolean => (isHttp2(req) ? res.writableEnded : res.writableFinished);

/**
 * Meters one finished exchange: an HTTP/1.1 one by its connection's bytes since the last (Meter.settle), an HTTP/2
 * one by its own stream.
 */
export function settleExchange(meter: Meter, req: IncomingMessage, res: ServerResponse, socket: Socket, route: ShareRoute | undefined): void {
  if (!isHttp2(req)) return meter.settle(socket, route);
  if (!route) return;
  const h2req = req as unknown as CountedRequest;
  const h2res = res as unknown as CountedResponse;
  const stream = h2req.stream;
  const rx = h2req.rx + headBytes(h2req.trailers);
  const tx = headBytes(stream.sentHeaders) + h2res.tx + headBytes(stream.sentTrailers);
  h2req.rx = 0;
  h2res.tx = 0;
  meter.add(route, rx, tx);
}

/**
 * What revocation closes when the rule that admitted a request no longer holds (edge/revocation.ts): an HTTP/1.1
 * request's connection; an HTTP/2 request's stream, and its whole connection when `wholeSession` (a client
 * certificate is the connection's, not the stream's).
 */
export function revocable(req: IncomingMessage, socket: Socket, wholeSession: boolean): Duplex {
  if (!isHttp2(req)) return socket;
  const stream = streamOf(req);
  const closing = {
    get destroyed() {
      return stream.destroyed;
    },
    once: (event: string, listener: () => void) => stream.once(event, listener),
    destroy: () => {
      const session = stream.session;
      stream.destroy();
      if (wholeSession) session?.destroy();
    },
  };
  return closing as unknown as Duplex;
}

/**
 * Makes an HTTP/2 request look as the HTTP/1.1 one the handler knows: raw header lines without pseudo-fields, `host`
 * from `:authority`, cookies on one line. Returns why the request is malformed, or undefined.
 */
function normalise(req: Http2ServerRequest): string | undefined {
  const headers = req.headers;
  const method = headers[':method'];
  if (method === 'CONNECT') return 'CONNECT is not served here';
  const authority = headers[':authority'];
  const host = headers.host;
  if (authority === undefined && host === undefined) return 'the request names no host (:authority)';
  if (authority !== undefined && host !== undefined && routingHost(String(host)) !== routingHost(String(authority))) {
    return 'the request has a host field that differs from its :authority';
  }
  const raw = req.rawHeaders;
  const out: string[] = [];
  const cookies: string[] = [];
  let sawHost = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.charCodeAt(0) === 58 /* : */) continue;
    if (name === 'cookie') {
      cookies.push(raw[i + 1]);
      continue;
    }
    if (name === 'host') {
      if (sawHost) return 'the request has more than one host field';
      sawHost = true;
    }
    out.push(name, raw[i + 1]);
  }
  if (!sawHost) {
    out.unshift('host', String(authority));
    headers.host = String(authority);
  }
  if (cookies.length) out.push('cookie', cookies.join('; '));
  raw.length = 0;
  raw.push(...out);
  return undefined;
}

interface Http2Front {
  /** How long `address` stays penalised (ms; 0: not), its HTTP/2 connection sent away a moment ago. */
  penaltyLeft(address: string | undefined): number;
  /** A TLS connection that negotiated `h2`. */
  accept(socket: TLSSocket): void;
  /** GOAWAY to every connection: each closes once its open streams finished. */
  close(): void;
  /** Closes every connection now. */
  destroy(): void;
  /** Connections open now (tests). */
  readonly sessions: number;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export function http2Front(handler: Handler, limits = H2_LIMITS): Http2Front {
  const sessions = new Set<ServerHttp2Session>();
  const sockets = new Set<TLSSocket>();
  const server = http2.createServer({
    settings: {
      maxConcurrentStreams: limits.maxConcurrentStreams,
      maxHeaderListSize: limits.maxHeaderListSize,
      enablePush: false,
      enableConnectProtocol: false,
    },
    maxHeaderListPairs: limits.maxHeaderListPairs,
    maxSessionInvalidFrames: 100,
    maxSessionRejectedStreams: 100,
    maxOutstandingPings: 10,
    maxSessionMemory: 10,
    peerMaxConcurrentStreams: limits.maxConcurrentStreams,
    Http2ServerRequest: CountedRequest,
    Http2ServerResponse: CountedResponse,
  });
  server.setTimeout(limits.idleMs);
  server.on('timeout', () => undefined);

  const penalties = new Penalties(limits.penaltyMs);
  const resets = rate(limits.resets);
  const pings = rate(limits.pings);
  const settings = rate(limits.settings);
  const refusals = rate(limits.refusals);
  let sessionCount = 0;
  /** Per connection: what to do when one of its requests is refused for its header list. */
  const heads = new WeakMap<Http2Session, () => void>();
  const addresses = new WeakMap<Http2Session, string | undefined>();
  let accepting: TLSSocket | undefined;
  const calm = (session: Http2Session, why: string) => {
    if (session.destroyed) return;
    penalties.strike(addresses.get(session));
    session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from(why));
    session.destroy();
    // streams nghttp2 already read from the same chunk are announced after this: none of them is served
    session.removeAllListeners('stream');
    session.on('stream', (stream: Http2Stream) => stream.destroy());
  };

  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    addresses.set(session, accepting?.remoteAddress);
    session.once('close', () => sessions.delete(session));
    // nghttp2 ending the connection for a flood of its own finding (CONTINUATION, invalid frames) is a strike too;
    // a connection that merely broke (reset, closed without TLS close_notify, as curl does) is not: many clients
    // share an address, and a strike refuses every one of them for a while
    session.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code?.startsWith('ERR_HTTP2_')) penalties.strike(addresses.get(session));
    });
    const key = String(++sessionCount);
    // a stream the client resets counts against the connection's rate; one listener for all its streams
    const reset = () => resets(key, () => calm(session, 'too many streams reset'));
    heads.set(session, () => refusals(key, () => calm(session, 'too many oversized header lists')));
    session.on('ping', () => pings(key, () => calm(session, 'too many PING frames')));
    session.on('remoteSettings', () => settings(key, () => calm(session, 'too many SETTINGS frames')));
    // before the server's own listener, which hands the stream to the request handler
    session.prependListener('stream', (stream: Http2Stream) => {
      if (session.destroyed) return;
      // reset in the same read as its HEADERS: closed before this listener could hear of it
      if (stream.closed || stream.destroyed) return reset();
      stream.on('error', ignore);
      // 'aborted' comes at most once per stream
      stream.on('aborted', reset);
    });
  });
  server.on('sessionError', () => undefined);

  server.on('request', (req: CountedRequest, res: CountedResponse) => {
    // reset in the same read as its HEADERS (rapid reset): nothing is started for it
    if (req.stream.destroyed || req.stream.closed) return;
    if (req.rx > limits.maxHeaderListSize) {
      // nghttp2 takes any size (SETTINGS_MAX_HEADER_LIST_SIZE is advisory): refused here, as nginx does, with 400
      heads.get(req.stream.session!)?.();
      req.resume();
      return answer(res as unknown as ServerResponse, 'EH_REQUEST_HEADERS_TOO_LARGE', `the request's header fields are over ${limits.maxHeaderListSize} bytes`);
    }
    const malformed = normalise(req);
    const h1res = res as unknown as ServerResponse;
    if (malformed) {
      req.resume();
      return answer(h1res, 'EH_REQUEST_MALFORMED', malformed);
    }
    handler(req as unknown as IncomingMessage, h1res);
  });

  return {
    penaltyLeft: (address) => penalties.left(address),
    accept(socket) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      accepting = socket;
      server.emit('connection', socket);
      accepting = undefined;
    },
    get sessions() {
      return sessions.size;
    },
    close() {
      for (const s of sessions) s.close();
    },
    destroy() {
      // a session closed gracefully before waits for its peer to close the connection: not any more
      for (const s of sockets) s.destroy();
    },
  };
}
