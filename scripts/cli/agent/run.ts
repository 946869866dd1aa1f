/**
 * `edgehub agent run`: the agent (CONTRACT.md "The agent"; shared/agentProtocol.ts). For each edge address it dials
 * the edge's TLS listener with its certificate (ALPN `edgehub-agent/1`, the edge's certificate checked against the
 * identity's edge CA) and serves HTTP/2 on that connection: the edge sends it its environment's targets, then
 * CONNECT streams, each carried to its target by a TCP connection made here, in the private network. Nothing
 * listens here: every connection is outbound.
 *
 * A CONNECT is refused (403) unless its target is one of the targets the edge listed for this connection (its
 * environment's shares) and, when `--allow` patterns are given, matches one of them. Lost connections are dialed
 * again with jittered exponential backoff, without limit.
 */
import http2, { type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { AGENT_ALPN, authorityOf, ERROR_HEADER, parseAuthority, TARGETS_PATH, type AllowPattern } from '../../../shared/agentProtocol.js';
import type { AgentIdentity } from './identity.js';

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
const MAX_TARGETS_BODY = 1 << 20;

export interface RunOptions {
  identity: AgentIdentity;
  /** Edge addresses (host:port) to dial instead of the identity's. */
  edges?: string[];
  allow?: AllowPattern[];
  log: (line: string) => void;
}

/** One edge: dialed, served, and dialed again when lost. */
class EdgeLink {
  private socket: tls.TLSSocket | undefined;
  private session: Http2Session | undefined;
  private targets = new Set<string>();
  private targetsUpdate: Promise<void> = Promise.resolve();
  private attempts = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Whether the edge accepted this agent (it sent the targets): the connection counts as up. */
  private up = false;
  private readonly open = new Set<net.Socket>();

  constructor(
    private readonly address: string,
    private readonly options: RunOptions,
  ) {}

  start(): void {
    this.dial();
  }

  private dial(): void {
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
    socket.on('error', (err: NodeJS.ErrnoException) => (reason = err.code ? `${err.code}${err.message.includes(err.code) ? '' : ` (${err.message})`}` : err.message));
    socket.once('secureConnect', () => {
      socket.setTimeout(0);
      if (socket.alpnProtocol !== AGENT_ALPN) {
        reason = 'the edge does not take agents on this port (ALPN not agreed)';
        return void socket.destroy();
      }
      const server = http2.createServer({ settings: { initialWindowSize: STREAM_WINDOW, maxFrameSize: MAX_FRAME, enablePush: false } });
      server.on('session', (session: Http2Session) => {
        this.session = session;
        session.on('error', () => undefined);
        session.once('connect', () => session.setLocalWindowSize(SESSION_WINDOW));
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
      if (Date.now() - started >= STABLE_MS && this.up) this.attempts = 0;
      const wasUp = this.up;
      this.up = false;
      const delay = this.backoff();
      const why = wasUp ? '' : socket.alpnProtocol === AGENT_ALPN ? 'the edge closed the connection (is this agent revoked?)' : reason;
      this.options.log(wasUp ? `reconnecting to edge ${this.address} in ${(delay / 1000).toFixed(1)} s` : `cannot connect to edge ${this.address}: ${why}; retrying in ${(delay / 1000).toFixed(1)} s`);
      this.timer = setTimeout(() => this.dial(), delay);
    });
  }

  /** Exponential from 250 ms to 5 s, each wait drawn between half and all of it (agents do not reconnect in step). */
  private backoff(): number {
    const ceiling = Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** this.attempts);
    this.attempts++;
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  private serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => undefined);
    const method = headers[':method'];
    if (method === 'PUT' && headers[':path'] === TARGETS_PATH) return this.takeTargets(stream);
    if (method === 'CONNECT') return void this.targetsUpdate.then(() => this.carry(stream, String(headers[':authority'] ?? '')));
    stream.respond({ ':status': 404, [ERROR_HEADER]: 'unknown request' }, { endStream: true });
  }

  private takeTargets(stream: ServerHttp2Stream): void {
    let size = 0;
    const chunks: Buffer[] = [];
    this.targetsUpdate = new Promise<void>((resolve) => {
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_TARGETS_BODY) return void stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        chunks.push(chunk);
      });
      stream.once('close', () => resolve());
      stream.once('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { targets?: unknown };
          if (!Array.isArray(body.targets)) throw new Error('no targets');
          const next = new Set<string>();
          for (const t of body.targets) {
            const parsed = typeof t === 'string' ? parseAuthority(t) : undefined;
            if (parsed) next.add(authorityOf(parsed.host, parsed.port));
          }
          this.targets = next;
          stream.respond({ ':status': 204 }, { endStream: true });
          if (!this.up) {
            this.up = true;
            const { identity } = this.options;
            this.options.log(`connected to edge ${this.address} (agent ${identity.id}, environment ${identity.envZId}, ${next.size} target${next.size === 1 ? '' : 's'})`);
          }
        } catch {
          stream.respond({ ':status': 400, [ERROR_HEADER]: 'targets: expected {"targets": ["host:port", ...]}' }, { endStream: true });
        }
        resolve();
      });
    });
  }

  /** Why the agent will not connect to `authority`, or undefined when it may. */
  private refusal(authority: string, target: { host: string; port: number } | undefined): string | undefined {
    if (!target) return `'${authority}' is not a host:port`;
    const normalized = authorityOf(target.host, target.port);
    if (!this.targets.has(normalized)) return `the agent refuses ${normalized}: it is not the target of a share of environment ${this.options.identity.envZId}`;
    const allow = this.options.allow;
    if (allow?.length && !allow.some((p) => p.matches(target.host, target.port))) return `the agent refuses ${normalized}: it matches no --allow pattern (${allow.map((p) => p.text).join(', ')})`;
    return undefined;
  }

  private carry(stream: ServerHttp2Stream, authority: string): void {
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
      socket.pipe(stream);
      stream.pipe(socket);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!connected) {
        if (!stream.destroyed && !stream.headersSent) stream.respond({ ':status': 502, [ERROR_HEADER]: `the agent cannot connect to ${authority} (${err.code ?? err.message})` }, { endStream: true });
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

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.open) s.destroy();
    const socket = this.socket;
    if (!socket || socket.destroyed) return;
    await new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      this.session?.close();
      socket.end();
      setTimeout(() => socket.destroy(), 1_000).unref();
    });
  }
}

/** Runs one link per edge address until stop(). */
export class AgentRunner {
  private readonly links: EdgeLink[];

  constructor(options: RunOptions) {
    const edges = options.edges?.length ? options.edges : options.identity.edges;
    if (!edges.length) throw new Error('no edge address to dial: the identity lists none; pass --edge HOST:PORT');
    this.links = [...new Set(edges)].map((address) => new EdgeLink(address, options));
  }

  start(): this {
    for (const link of this.links) link.start();
    return this;
  }

  async stop(): Promise<void> {
    await Promise.all(this.links.map((l) => l.stop()));
  }
}
