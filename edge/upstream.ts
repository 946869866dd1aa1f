import { createRequire } from 'node:module';
import net from 'node:net';
import tls from 'node:tls';
import type { EgressPolicy } from '../shared/egress.js';

/**
 * The edge's HTTP/1.1 client towards share targets: keep-alive connections per target origin, the request head
 * written as one string, the answer parsed by Node's own llhttp binding (the parser node:http uses on both sides)
 * and handed to an {@link UpstreamHandler} as it arrives. It does the little a reverse proxy needs and nothing
 * else, which costs about a third less CPU per request than undici's dispatcher (bench/README.md, "The edge against
 * nginx"): no per-request Request object or header validation beyond what the edge adds itself, no per-reuse
 * setImmediate, no header object built only to be flattened again.
 *
 * What it guarantees: a connection is reused only after a complete answer to a completely sent request on a
 * keep-alive connection; bytes arriving on an idle connection retire it; idle connections are closed after
 * 4 s or the target's own `Keep-Alive: timeout`, whichever is shorter; an idempotent request
 * without a body that meets a reused connection closed under it (the race every keep-alive client has) is sent once
 * more on a new connection; no answer head within the timeout of the last request byte is a timeout.
 */

interface NativeParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  execute(data: Buffer): number | Error;
  finish(): number | Error | undefined;
  close(): void;
  [key: number]: unknown;
}
interface NativeParserClass {
  new (): NativeParser;
  RESPONSE: number;
  kOnHeaders: number;
  kOnHeadersComplete: number;
  kOnBody: number;
  kOnMessageComplete: number;
}
const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser: NativeParserClass };
const kOnHeaders = HTTPParser.kOnHeaders | 0;
const kOnHeadersComplete = HTTPParser.kOnHeadersComplete | 0;
const kOnBody = HTTPParser.kOnBody | 0;
const kOnMessageComplete = HTTPParser.kOnMessageComplete | 0;

/** What the caller does with the answer; each method is called at most once, except onBody. */
export interface UpstreamHandler {
  /** The final answer's head (1xx answers are not passed on). Return false if the caller could not take it. */
  onHead(status: number, statusMessage: string, rawHeaders: string[]): boolean;
  /** A piece of the body; return false to pause the target until `resume` is called. */
  onBody(chunk: Buffer, resume: () => void): boolean;
  onEnd(): void;
  /** The exchange failed before it ended: `timedOut` when no answer head came in time. */
  onError(err: NodeJS.ErrnoException, timedOut: boolean): void;
}

export interface UpstreamRequest {
  method: string;
  /** The request line and header lines (`GET /x HTTP/1.1\r\nname: value\r\n...`), without the closing empty line. */
  head: string;
  /** A body to stream (the client's request); `chunked` when its length is not known. */
  body: NodeJS.ReadableStream | null;
  chunked: boolean;
}

export interface UpstreamOptions {
  policy: EgressPolicy;
  /** Connect + request + answer head must take less than this. */
  timeoutMs: number;
  /** Idle keep-alive connections are closed after this long (default 4 s, below common server defaults of 5 s). */
  idleMs?: number;
  /** Idle connections kept per origin (default 256); more are closed once free. */
  maxIdlePerOrigin?: number;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
const KEEP_ALIVE_TIMEOUT = /timeout=(\d+)/i;

class Connection {
  readonly socket: net.Socket;
  private readonly parser: NativeParser;
  exchange: Exchange | null = null;
  /** Set once the connection carried a complete exchange and went back to the pool. */
  reused = false;
  idleUntil = 0;
  private pendingHeaders: string[] = [];
  private keepAlive = false;
  private informational = false;
  private closed = false;

  constructor(
    readonly origin: Origin,
    socket: net.Socket,
  ) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 60_000);
    const parser = new HTTPParser();
    parser.initialize(HTTPParser.RESPONSE, {}, 0, 0);
    parser[kOnHeaders] = this.onHeaders;
    parser[kOnHeadersComplete] = this.onHeadersComplete;
    parser[kOnBody] = this.onBody;
    parser[kOnMessageComplete] = this.onMessageComplete;
    this.parser = parser;
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onSocketError);
    socket.on('close', this.onClose);
  }

  private readonly onData = (data: Buffer) => {
    const exchange = this.exchange;
    if (!exchange) return this.destroy(); // bytes nobody asked for: the connection cannot be trusted any more
    exchange.receivedBytes = true;
    const result = this.parser.execute(data);
    if (result instanceof Error) this.fail(Object.assign(new Error(`the target sent an invalid HTTP answer (${(result as NodeJS.ErrnoException).code ?? result.message})`), { code: 'HPE_INVALID' }));
  };

  private readonly onHeaders = (headers: string[]) => {
    for (const h of headers) this.pendingHeaders.push(h);
  };

  private readonly onHeadersComplete = (
    _major: number,
    _minor: number,
    headers: string[] | undefined,
    _method: unknown,
    _url: unknown,
    status: number,
    statusMessage: string,
    upgrade: boolean,
    keepAlive: boolean,
  ): number => {
    const exchange = this.exchange;
    if (headers === undefined) {
      headers = this.pendingHeaders;
      this.pendingHeaders = [];
    }
    if (!exchange) {
      this.destroy(); // an answer nobody asked for
      return 1;
    }
    if (upgrade) {
      this.fail(Object.assign(new Error('the target switched protocols on a request that did not ask to'), { code: 'HPE_UNEXPECTED_UPGRADE' }));
      return 1;
    }
    if (status < 200) {
      this.informational = true; // the final answer follows on the same message stream
      return 1;
    }
    this.informational = false;
    this.keepAlive = keepAlive;
    if (keepAlive) this.noteKeepAlive(headers);
    if (!exchange.head(status, statusMessage, headers)) {
      this.destroy();
      return 1;
    }
    return exchange.method === 'HEAD' || status === 204 || status === 304 ? 1 : 0;
  };

  /** A target's `Keep-Alive: timeout=N` (seconds) shortens how long this connection may stay idle. */
  private noteKeepAlive(headers: string[]) {
    for (let i = 0; i < headers.length; i += 2) {
      if (headers[i].length === 10 && headers[i].toLowerCase() === 'keep-alive') {
        const m = KEEP_ALIVE_TIMEOUT.exec(headers[i + 1]);
        if (m) this.targetIdleMs = Math.max(0, Number(m[1]) * 1000 - 1000);
      }
    }
  }
  targetIdleMs: number | undefined;

  private readonly onBody = (chunk: Buffer) => {
    this.exchange?.body(chunk);
  };

  private readonly onMessageComplete = () => {
    if (this.informational) {
      this.informational = false;
      return;
    }
    const exchange = this.exchange;
    if (!exchange) return;
    this.exchange = null;
    const reusable = this.keepAlive && exchange.requestSent && !this.closed;
    exchange.end();
    if (reusable) this.origin.release(this);
    else this.destroy();
  };

  private readonly onEnd = () => {
    // a body delimited by the connection's end is complete now; anything else ended too early
    if (this.exchange) {
      const result = this.parser.finish();
      if (result instanceof Error) this.fail(Object.assign(new Error('the target closed the connection in the middle of its answer'), { code: 'ECONNRESET' }));
    }
    this.closed = true;
    if (this.exchange) this.fail(Object.assign(new Error('the target closed the connection before answering'), { code: 'ECONNRESET' }));
    this.destroy();
  };

  private readonly onSocketError = (err: NodeJS.ErrnoException) => {
    this.fail(err);
  };

  private readonly onClose = () => {
    this.closed = true;
    this.origin.forget(this);
    if (this.exchange) this.fail(Object.assign(new Error('the connection to the target closed'), { code: 'ECONNRESET' }));
    this.parser.close();
  };

  private fail(err: NodeJS.ErrnoException) {
    const exchange = this.exchange;
    this.exchange = null;
    this.destroy();
    exchange?.fail(err, this.reused);
  }

  /** Hands an exchange's request to this connection. */
  send(exchange: Exchange) {
    this.exchange = exchange;
    this.keepAlive = false;
    this.informational = false;
    exchange.writeTo(this.socket);
  }

  /** Drops the connection (its exchange, if any, is the caller's to settle). */
  destroy() {
    this.closed = true;
    this.socket.destroy();
  }
}

class Origin {
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();

  constructor(
    private readonly client: UpstreamClient,
    readonly target: URL,
  ) {}

  /** The most recently used idle connection still fresh, or a new one. */
  acquire(fresh: boolean): Connection {
    if (!fresh) {
      const now = Date.now();
      for (let c = this.idle.pop(); c; c = this.idle.pop()) {
        if (c.idleUntil > now) return c;
        c.destroy();
      }
    }
    const c = new Connection(this, this.client.connect(this.target));
    this.all.add(c);
    return c;
  }

  release(c: Connection) {
    if (this.idle.length >= this.client.maxIdlePerOrigin) return c.destroy();
    c.reused = true;
    const idleMs = c.targetIdleMs === undefined ? this.client.idleMs : Math.min(c.targetIdleMs, this.client.idleMs);
    if (idleMs <= 0) return c.destroy();
    c.idleUntil = Date.now() + idleMs;
    this.idle.push(c);
  }

  forget(c: Connection) {
    this.all.delete(c);
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
  }

  /**
   * Times out exchanges whose answer head is late and closes idle connections past their time; true when the origin
   * has no connection left. (A Set of waiting exchanges, added to and deleted from on every request, made V8 promote
   * about 3 KB per request to the old generation; the connections are few and long-lived.)
   */
  sweep(now: number): boolean {
    for (const c of this.all) {
      const exchange = c.exchange;
      if (exchange?.awaitingHead && exchange.deadline <= now) exchange.abort(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' }), true);
    }
    for (let i = this.idle.length - 1; i >= 0; i--) {
      if (this.idle[i].idleUntil <= now) this.idle[i].destroy(); // 'close' takes it out of the lists
    }
    return this.all.size === 0;
  }

  destroy() {
    for (const c of this.all) c.destroy();
  }
}

/** One request and its answer. */
export class Exchange {
  receivedBytes = false;
  requestSent = false;
  private settled = false;
  private retried = false;
  private connection: Connection | null = null;
  deadline = 0;
  /** Until the answer head arrived: the deadline applies (checked by the client's sweep, no timer per request). */
  awaitingHead = false;

  constructor(
    private readonly client: UpstreamClient,
    private readonly origin: Origin,
    private readonly request: UpstreamRequest,
    private readonly handler: UpstreamHandler,
  ) {}

  get method() {
    return this.request.method;
  }

  start(fresh = false) {
    this.deadline = Date.now() + this.client.timeoutMs;
    this.awaitingHead = true;
    this.connection = this.origin.acquire(fresh);
    this.connection.send(this);
  }

  writeTo(socket: net.Socket) {
    const { head, body, chunked } = this.request;
    if (!body) {
      socket.write(`${head}\r\n`, 'latin1');
      this.requestSent = true;
      return;
    }
    socket.write(`${head}${chunked ? 'transfer-encoding: chunked\r\n' : ''}\r\n`, 'latin1');
    const onDrain = () => body.resume();
    // a connection lost in the middle of the upload: the rest of the body is read and dropped
    const onClose = () => body.resume();
    socket.once('close', onClose);
    body.on('data', (chunk: Buffer) => {
      if (socket.destroyed) return;
      // the deadline is for the answer head after the request was sent: an upload in progress moves it
      this.deadline = Date.now() + this.client.timeoutMs;
      let flowing: boolean;
      if (chunked) {
        if (!chunk.length) return;
        socket.cork();
        socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
        socket.write(chunk);
        flowing = socket.write('\r\n', 'latin1');
        socket.uncork();
      } else flowing = socket.write(chunk);
      if (!flowing) {
        body.pause();
        socket.once('drain', onDrain);
      }
    });
    body.once('end', () => {
      socket.off('close', onClose);
      if (socket.destroyed) return;
      if (chunked) socket.write('0\r\n\r\n', 'latin1');
      this.requestSent = true;
      this.deadline = Date.now() + this.client.timeoutMs;
    });
  }

  head(status: number, statusMessage: string, rawHeaders: string[]): boolean {
    this.awaitingHead = false;
    if (this.settled) return false;
    return this.handler.onHead(status, statusMessage, rawHeaders);
  }

  private readonly resumeTarget = () => this.connection?.socket.resume();

  body(chunk: Buffer) {
    if (this.settled) return;
    if (!this.handler.onBody(chunk, this.resumeTarget)) this.connection?.socket.pause();
  }

  end() {
    this.awaitingHead = false;
    this.connection = null;
    if (this.settled) return;
    this.settled = true;
    this.handler.onEnd();
  }

  /** The connection failed under this exchange; sent again once when that is safe. */
  fail(err: NodeJS.ErrnoException, onReusedConnection: boolean, timedOut = false) {
    this.awaitingHead = false;
    this.connection = null;
    if (this.settled) return;
    if (!timedOut && onReusedConnection && !this.receivedBytes && !this.retried && !this.request.body && IDEMPOTENT.has(this.request.method)) {
      this.retried = true;
      return this.start(true);
    }
    this.settled = true;
    this.handler.onError(err, timedOut);
  }

  /** The client went away or the head did not come in time: the target connection goes too. */
  abort(err: NodeJS.ErrnoException, timedOut = false) {
    const connection = this.connection;
    if (connection) {
      connection.exchange = null;
      connection.destroy();
    }
    this.fail(err, false, timedOut);
  }
}

export class UpstreamClient {
  private readonly origins = new Map<string, Origin>();
  readonly timeoutMs: number;
  readonly idleMs: number;
  readonly maxIdlePerOrigin: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: UpstreamOptions) {
    this.timeoutMs = options.timeoutMs;
    this.idleMs = options.idleMs ?? 4000;
    this.maxIdlePerOrigin = options.maxIdlePerOrigin ?? 256;
    // one coarse timer for every deadline instead of a timer per request
    const tick = Math.max(10, Math.min(250, Math.floor(this.timeoutMs / 10)));
    this.timer = setInterval(() => this.sweep(), tick);
    this.timer.unref();
  }

  /** Sends `request` to `target`'s origin; `handler` hears of the answer. Returns the exchange (to abort it). */
  request(target: URL, request: UpstreamRequest, handler: UpstreamHandler): Exchange {
    let origin = this.origins.get(target.origin);
    if (!origin) {
      origin = new Origin(this, target);
      this.origins.set(target.origin, origin);
    }
    const exchange = new Exchange(this, origin, request, handler);
    exchange.start();
    return exchange;
  }

  connect(target: URL): net.Socket {
    const host = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
    const secure = target.protocol === 'https:';
    const port = Number(target.port) || (secure ? 443 : 80);
    const lookup = this.options.policy.lookup as never;
    if (!secure) return net.connect({ host, port, lookup });
    return tls.connect({ host, port, lookup, servername: net.isIP(host) ? undefined : host, ALPNProtocols: ['http/1.1'] });
  }

  private sweep() {
    const now = Date.now();
    for (const [key, origin] of this.origins) if (origin.sweep(now)) this.origins.delete(key);
  }

  close() {
    clearInterval(this.timer);
    for (const origin of this.origins.values()) origin.destroy();
    this.origins.clear();
  }
}
