/**
 * One edge, as the agent sees it: dialled, served, and dialled again when lost. The agent dials the edge's TLS
 * listener with its certificate (ALPN `edgehub-agent/1`, the edge's certificate checked against the identity's edge
 * CA) and serves HTTP/2 on that connection: the edge sends it its environment's targets and the live edges, then
 * CONNECT streams, each carried to its target by a TCP connection made here, in the private network. Nothing listens
 * here: every connection is outbound.
 *
 * A CONNECT is refused (403) unless its target is one of the targets the edge listed for this connection (its
 * environment's shares) and, when `--allow` patterns are given, matches one of them. Lost connections are dialled
 * again with jittered exponential backoff, without limit.
 */
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { backoffMs } from './backoff.js';
import { certificateExpiry } from './identity.js';
import { AGENT_ALPN, authorityOf, EDGES_PATH, ERROR_HEADER, MAX_EDGES, parseAuthority, parseChecks, STATE_PATH, TARGETS_PATH } from './protocol.js';
import { PoolState } from './pool.js';
import { pump } from './pump.js';

/** What this side accepts per stream and per connection before the edge must wait (back-pressure). */
const STREAM_WINDOW = 1 << 20;
const SESSION_WINDOW = 32 << 20;
/** Largest DATA frame this side takes: fewer frames per MiB (HTTP/2's default is 16 KiB). */
const MAX_FRAME = 256 << 10;
const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5_000;
/** A connection that lasted this long resets the backoff. */
const STABLE_MS = 5_000;
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_MESSAGE_BODY = 1 << 20;
/**
 * A PING to the edge every this many ms, and the connection given up when the previous one is still unanswered: a
 * path that went silent (a NAT or firewall that forgot the connection, an edge that hangs) is noticed within two
 * intervals, where TCP would take many minutes. EDGEHUB_AGENT_PING_MS overrides it (at least 100).
 */
const PING_MS = Math.max(100, Number(process.env.EDGEHUB_AGENT_PING_MS) || 10_000);

/**
 * @typedef {object} LinkOptions
 * @property {import('./identity.js').AgentIdentity} identity
 * @property {import('./protocol.js').AllowPattern[]} [allow]
 * @property {(line: string) => void} log
 * @property {(link: EdgeLink, edges: string[], self: string[]) => void} [onEdges] The edge told the live edges.
 * @property {PoolState} [pool] Weight, priority, draining and targets down, told to the edge.
 * @property {(targets: string[]) => void} [onTargets] The edge told this connection its targets.
 */

export class EdgeLink {
  /** @type {tls.TLSSocket | undefined} */ socket;
  /** @type {import('node:http2').Http2Session | undefined} */ session;
  /** @type {Set<string>} */ targets = new Set();
  /** The HTTP checks of targets that have one (the share's health check), as the edge last told them. @type {Map<string, import('./protocol.js').TargetCheck>} */
  checks = new Map();
  /** @type {Promise<void>} */ targetsUpdate = Promise.resolve();
  attempts = 0;
  /** @type {NodeJS.Timeout | undefined} */ timer;
  stopped = false;
  /** Whether the edge accepted this agent (it sent the targets): the connection counts as up. */
  up = false;
  /** The agent addresses the edge at the other end publishes (its own), as it last said. @type {string[]} */
  self = [];
  /** The live edges as the edge at the other end last told them. @type {string[]} */
  edges = [];
  /** @type {Set<net.Socket>} */ open = new Set();
  /** CONNECT streams the edge opened and that are not closed yet (what a drain waits for). */
  active = 0;

  /**
   * @param {string} address host:port
   * @param {LinkOptions} options
   * @param {'given' | 'found'} origin given (--edge or the identity), or found in an edge's list of live edges
   */
  constructor(address, options, origin) {
    this.address = address;
    this.options = options;
    this.origin = origin;
  }

  start() {
    this.dial();
    return this;
  }

  dial() {
    if (this.stopped) return;
    const edge = parseAuthority(this.address);
    if (!edge) {
      this.options.log(`edge ${this.address}: not a host:port; skipped`);
      return;
    }
    const { identity } = this.options;
    const started = Date.now();
    this.up = false;
    this.targets = new Set();
    const socket = tls.connect({
      host: edge.host,
      port: edge.port,
      servername: identity.edgeServerName || (net.isIP(edge.host) ? undefined : edge.host),
      ca: identity.edgeCaPem.trim() ? identity.edgeCaPem : undefined,
      cert: identity.certificatePem,
      key: identity.keyPem,
      ALPNProtocols: [AGENT_ALPN],
      timeout: CONNECT_TIMEOUT_MS,
    });
    this.socket = socket;
    let reason = 'the connection closed';
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 15_000);
    socket.once('timeout', () => socket.destroy(new Error('timed out')));
    socket.on(
      'error',
      (/** @type {NodeJS.ErrnoException} */ err) =>
        (reason = err.code ? `${err.code}${err.message.includes(err.code) ? '' : ` (${err.message})`}` : err.message),
    );
    socket.once('secureConnect', () => {
      socket.setTimeout(0);
      if (socket.alpnProtocol !== AGENT_ALPN) {
        reason = 'the edge does not take agents on this port (ALPN not agreed)';
        return void socket.destroy();
      }
      const server = http2.createServer({ settings: { initialWindowSize: STREAM_WINDOW, maxFrameSize: MAX_FRAME, enablePush: false } });
      server.on('session', (session) => {
        this.session = session;
        session.on('error', () => undefined);
        session.once('connect', () => {
          session.setLocalWindowSize(SESSION_WINDOW);
          this.heartbeat(socket, session, (why) => (reason = why));
        });
      });
      server.on('stream', (stream, headers) => this.serve(stream, headers));
      server.emit('connection', socket);
    });
    socket.once('close', () => {
      this.session = undefined;
      for (const s of this.open) s.destroy();
      this.open.clear();
      if (this.stopped) return;
      if (this.up) this.options.log(`disconnected from edge ${this.address}: ${reason}`);
      // what it said of the live edges no longer counts (an edge stopping says so before it closes)
      if (this.edges.length) {
        this.edges = [];
        this.options.onEdges?.(this, [], this.self);
      }
      if (Date.now() - started >= STABLE_MS && this.up) this.attempts = 0;
      const wasUp = this.up;
      this.up = false;
      const delay = this.backoff();
      const refused =
        certificateExpiry(this.options.identity) <= Date.now()
          ? "the edge closed the connection: this agent's certificate has expired (enroll this machine again)"
          : 'the edge closed the connection (is this agent revoked?)';
      const why = wasUp ? '' : socket.alpnProtocol === AGENT_ALPN ? refused : reason;
      // the first failure says where the address came from: the setting to change when it is wrong
      const hint =
        !wasUp && this.attempts === 1 && !socket.alpnProtocol
          ? ` (edge addresses come from the service's HUB_EDGE_AGENT_ADDRESSES${this.origin === 'given' ? ', or --edge' : ''})`
          : '';
      this.options.log(
        wasUp
          ? `reconnecting to edge ${this.address} in ${(delay / 1000).toFixed(1)} s`
          : `cannot connect to edge ${this.address}: ${why}${hint}; retrying in ${(delay / 1000).toFixed(1)} s`,
      );
      this.timer = setTimeout(() => this.dial(), delay);
    });
  }

  /**
   * PINGs the edge every PING_MS; when one is still unanswered at the next, the connection is destroyed (and dialled
   * again), with `setReason` told why.
   * @param {tls.TLSSocket} socket
   * @param {import('node:http2').Http2Session} session
   * @param {(why: string) => void} setReason
   */
  heartbeat(socket, session, setReason) {
    let unanswered = false;
    const timer = setInterval(() => {
      if (unanswered) {
        setReason(`no answer from the edge within ${(PING_MS / 1000).toFixed(1)} s`);
        return void socket.destroy();
      }
      unanswered = true;
      try {
        session.ping((err) => {
          if (!err) unanswered = false;
        });
      } catch {
        // the session is closing: its socket's close redials
      }
    }, PING_MS);
    timer.unref();
    socket.once('close', () => clearInterval(timer));
  }

  /** Exponential from 250 ms to 5 s, each wait drawn between half and all of it (agents do not reconnect in step). */
  backoff() {
    return backoffMs(++this.attempts, { minMs: MIN_BACKOFF_MS, maxMs: MAX_BACKOFF_MS, jitter: 0.5 });
  }

  /**
   * @param {import('node:http2').ServerHttp2Stream} stream
   * @param {import('node:http2').IncomingHttpHeaders} headers
   */
  serve(stream, headers) {
    stream.on('error', () => undefined);
    const method = headers[':method'];
    if (method === 'PUT' && headers[':path'] === TARGETS_PATH) return this.takeTargets(stream);
    if (method === 'PUT' && headers[':path'] === EDGES_PATH) return void this.message(stream).then((body) => this.takeEdges(stream, body));
    if (method === 'GET' && headers[':path'] === STATE_PATH) return this.tellState(stream);
    if (method === 'CONNECT') {
      // carried even while draining: an edge that had not heard of the drain yet sent it (a race), and it is answered
      this.active++;
      stream.once('close', () => this.active--);
      return void this.targetsUpdate.then(() => this.carry(stream, String(headers[':authority'] ?? '')));
    }
    stream.respond({ ':status': 404, [ERROR_HEADER]: 'unknown request' }, { endStream: true });
  }

  /**
   * A small JSON body (at most 1 MiB); undefined when it is not one.
   * @param {import('node:http2').ServerHttp2Stream} stream
   * @returns {Promise<any>}
   */
  message(stream) {
    return new Promise((resolve) => {
      let size = 0;
      /** @type {Buffer[]} */
      const chunks = [];
      stream.on('data', (/** @type {Buffer} */ chunk) => {
        size += chunk.length;
        if (size > MAX_MESSAGE_BODY) return void stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        chunks.push(chunk);
      });
      stream.once('close', () => resolve(undefined));
      stream.once('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          resolve(undefined);
        }
      });
    });
  }

  /** @param {import('node:http2').ServerHttp2Stream} stream */
  takeTargets(stream) {
    this.targetsUpdate = this.message(stream).then((body) => {
      if (stream.destroyed) return;
      if (!body || !Array.isArray(body.targets)) {
        return void stream.respond({ ':status': 400, [ERROR_HEADER]: 'targets: expected {"targets": ["host:port", ...]}' }, { endStream: true });
      }
      /** @type {Set<string>} */
      const next = new Set();
      for (const t of body.targets) {
        const parsed = typeof t === 'string' ? parseAuthority(t) : undefined;
        if (parsed) next.add(authorityOf(parsed.host, parsed.port));
      }
      const before = this.targets;
      this.targets = next;
      this.checks = parseChecks(body.checks, next);
      // what this connection carries of them (its --allow patterns), and its pool state
      const serves = [...next].filter((t) => !this.refusal(t, parseAuthority(t)));
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.end(JSON.stringify({ serves, ...this.pool().snapshot() }));
      this.options.onTargets?.([...next]);
      const count = `${next.size} target${next.size === 1 ? '' : 's'}`;
      if (!this.up) {
        this.up = true;
        const { identity } = this.options;
        this.options.log(`connected to edge ${this.address} (agent ${identity.id}, environment ${identity.envZId}, ${count})`);
      } else if (before.size !== next.size || [...next].some((t) => !before.has(t))) {
        // a share made or deleted after the connection (edgehub share connects before the edge has loaded its share)
        this.options.log(`edge ${this.address}: ${count} now`);
      }
    });
  }

  /** @returns {PoolState} */
  pool() {
    if (!this.options.pool) this.options.pool = new PoolState();
    return this.options.pool;
  }

  /**
   * The pool state stream: one JSON line now and one per change, for as long as the edge keeps it open.
   * @param {import('node:http2').ServerHttp2Stream} stream
   */
  tellState(stream) {
    const pool = this.pool();
    stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
    /** @param {import('./pool.js').PoolSnapshot} snapshot */
    const write = (snapshot) => {
      if (!stream.destroyed && !stream.writableEnded) stream.write(JSON.stringify(snapshot) + '\n');
    };
    write(pool.snapshot());
    const unwatch = pool.watch(write);
    stream.once('close', unwatch);
    stream.resume();
  }

  /**
   * @param {import('node:http2').ServerHttp2Stream} stream
   * @param {any} body
   */
  takeEdges(stream, body) {
    if (stream.destroyed) return;
    if (!body || !Array.isArray(body.edges)) {
      return void stream.respond({ ':status': 400, [ERROR_HEADER]: 'edges: expected {"edges": ["host:port", ...], "self": [...]}' }, { endStream: true });
    }
    /** @param {unknown} list */
    const addresses = (list) =>
      (Array.isArray(list) ? list : [])
        .map((a) => (typeof a === 'string' ? parseAuthority(a) : undefined))
        .filter((a) => a !== undefined)
        .slice(0, MAX_EDGES)
        .map((a) => authorityOf(/** @type {{ host: string; port: number }} */ (a).host, /** @type {{ host: string; port: number }} */ (a).port));
    this.self = addresses(body.self);
    this.edges = addresses(body.edges);
    stream.respond({ ':status': 204 }, { endStream: true });
    this.options.onEdges?.(this, addresses(body.edges), this.self);
  }

  /**
   * Why the agent will not connect to `authority`, or undefined when it may.
   * @param {string} authority
   * @param {{ host: string; port: number } | undefined} target
   */
  refusal(authority, target) {
    if (!target) return `'${authority}' is not a host:port`;
    const normalized = authorityOf(target.host, target.port);
    if (!this.targets.has(normalized)) return `the agent refuses ${normalized}: it is not the target of a share of environment ${this.options.identity.envZId}`;
    const allow = this.options.allow;
    if (allow?.length && !allow.some((p) => p.matches(target.host, target.port)))
      return `the agent refuses ${normalized}: it matches no --allow pattern (${allow.map((p) => p.text).join(', ')})`;
    return undefined;
  }

  /**
   * @param {import('node:http2').ServerHttp2Stream} stream
   * @param {string} authority
   */
  carry(stream, authority) {
    if (stream.destroyed) return;
    const target = parseAuthority(authority);
    const refused = this.refusal(authority, target);
    if (refused || !target) return void stream.respond({ ':status': 403, [ERROR_HEADER]: refused ?? 'refused' }, { endStream: true });
    const socket = net.connect({ host: target.host, port: target.port });
    this.open.add(socket);
    socket.setNoDelay(true);
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    let connected = false;
    socket.once('connect', () => {
      connected = true;
      socket.setTimeout(0);
      if (stream.destroyed) return void socket.destroy();
      stream.respond({ ':status': 200 });
      // both ways with back-pressure; an end on one side ends the other (half-close), a reset resets
      pump(socket, stream);
      pump(stream, socket);
    });
    socket.on('error', (/** @type {NodeJS.ErrnoException} */ err) => {
      if (!connected) {
        if (!stream.destroyed && !stream.headersSent)
          stream.respond({ ':status': 502, [ERROR_HEADER]: `the agent cannot connect to ${authority} (${err.code ?? err.message})` }, { endStream: true });
        return;
      }
      stream.close(http2.constants.NGHTTP2_CONNECT_ERROR);
    });
    socket.once('close', () => this.open.delete(socket));
    stream.once('close', () => {
      if (!socket.destroyed) {
        // the edge ended its side cleanly: let the target finish writing; a reset tears down at once
        if (stream.rstCode && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) socket.destroy();
        else socket.end();
      }
    });
  }

  /** @returns {Promise<void>} */
  async stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.open) s.destroy();
    const socket = this.socket;
    if (!socket || socket.destroyed) return;
    await new Promise((resolve) => {
      socket.once('close', () => resolve(undefined));
      this.session?.close();
      socket.end();
      setTimeout(() => socket.destroy(), 1_000).unref();
    });
  }
}
