import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { EgressPolicy } from '../shared/egress.js';
import { answer, answerSocket } from './answers.js';
import type { Meter } from './meter.js';
import type { ShareRoute } from './types.js';
import { UpstreamClient, type Exchange, type UpstreamHandler } from './upstream.js';

/** RFC 9110 7.6.1 connection-specific headers, plus the de-facto ones; never forwarded in either direction. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings']);

/** The lengths of every name the edge drops or replaces: other names skip the lower-casing and set lookups. */
const lengthsOf = (...sets: Set<string>[]) => new Set(sets.flatMap((set) => [...set].map((n) => n.length)));

/** Headers only the edge may set towards a target: a client's own are dropped, never passed on. */
export const EDGE_SET_HEADERS = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-client-certificate-name', 'x-client-certificate-fingerprint', 'x-forwarded-email']);

/** Not forwarded: `Expect` (the edge already answered 100 Continue to the client itself). */
const NOT_FORWARDED = new Set(['expect']);

export interface ForwardContext {
  secure: boolean;
  /** Headers the edge adds (verified identity); set after the client's copies were dropped. */
  identity?: Record<string, string>;
  /** Replaces the Cookie header (the edge's own session cookie removed); undefined drops it. */
  cookie?: { value: string | undefined };
}

function connectionListed(headers: IncomingHttpHeaders): Set<string> | undefined {
  const value = headers.connection;
  if (!value) return undefined;
  return new Set(value.toLowerCase().split(',').map((t) => t.trim()));
}

const clientAddress = (req: IncomingMessage) => {
  const address = req.socket.remoteAddress ?? '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
};

export function requestHeaders(req: IncomingMessage, ctx: ForwardContext, keep?: Set<string>): OutgoingHttpHeaders {
  const listed = connectionListed(req.headers);
  const out: OutgoingHttpHeaders = {};
  for (const name in req.headers) {
    if (keep?.has(name)) out[name] = req.headers[name];
    else if (!HOP_BY_HOP.has(name) && !EDGE_SET_HEADERS.has(name) && !listed?.has(name)) out[name] = req.headers[name];
  }
  if (ctx.cookie) {
    if (ctx.cookie.value) out.cookie = ctx.cookie.value;
    else delete out.cookie;
  }
  out['x-forwarded-for'] = clientAddress(req);
  out['x-forwarded-proto'] = ctx.secure ? 'https' : 'http';
  if (req.headers.host) out['x-forwarded-host'] = req.headers.host;
  if (ctx.identity) Object.assign(out, ctx.identity);
  return out;
}

function responseHeaders(res: IncomingMessage): OutgoingHttpHeaders {
  const listed = connectionListed(res.headers);
  const out: OutgoingHttpHeaders = {};
  for (const name in res.headers) {
    if (HOP_BY_HOP.has(name) || listed?.has(name)) continue;
    out[name] = res.headers[name];
  }
  return out;
}

/** The target's path with the request's path and query appended (`/app` + `/x?y` -> `/app/x?y`). */
export function upstreamPath(target: URL, url: string | undefined): string {
  const base = target.pathname === '/' ? '' : target.pathname.replace(/\/$/, '');
  const requested = url && url.startsWith('/') ? url : `/${url ?? ''}`;
  if (!target.search) return base + requested;
  const q = requested.indexOf('?');
  return q < 0 ? base + requested + target.search : `${base}${requested.slice(0, q)}${target.search}&${requested.slice(q + 1)}`;
}

const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** Why a target connection failed, as the edge's answer. */
function failure(err: NodeJS.ErrnoException, timedOut: boolean, target: URL): [number, 'bad_gateway' | 'gateway_timeout' | 'forbidden', string] {
  const cause = (err.cause as NodeJS.ErrnoException | undefined) ?? err;
  if (err.code === 'EGRESS_DENIED' || cause.code === 'EGRESS_DENIED') return [403, 'forbidden', cause.message];
  if (timedOut || TIMEOUT_CODES.has(err.code ?? '')) return [504, 'gateway_timeout', `the share's target ${target.host} did not answer in time`];
  return [502, 'bad_gateway', `the share's target ${target.host} could not be reached (${cause.code ?? err.code ?? err.message})`];
}

/** Whether a request carries a body (RFC 9112 6.3): only then is it streamed upstream. */
const hasBody = (req: IncomingMessage) => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/** Header values the edge adds itself (verified identities) must be valid field values (RFC 9110 5.5). */
const INVALID_FIELD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * The request head towards the target, from the client's raw header lines: hop-by-hop headers, those the
 * Connection header lists, Expect (the edge answered 100 Continue itself) and the client's copies of the headers
 * only the edge sets are dropped; X-Forwarded-* and verified identities are added. Duplicates keep their order.
 */
function requestHead(req: IncomingMessage, path: string, ctx: ForwardContext, chunked: boolean): string {
  const raw = req.rawHeaders;
  const listed = connectionListed(req.headers);
  let head = `${req.method} ${path} HTTP/1.1\r\n`;
  for (let i = 0; i < raw.length; i += 2) {
    if (!listed && !REQUEST_DROP_LENGTHS.has(raw[i].length)) {
      head += `${raw[i]}: ${raw[i + 1]}\r\n`;
      continue;
    }
    const name = raw[i].toLowerCase();
    if (HOP_BY_HOP.has(name) || EDGE_SET_HEADERS.has(name) || NOT_FORWARDED.has(name) || listed?.has(name)) continue;
    if (name === 'cookie' && ctx.cookie) continue;
    head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  }
  if (ctx.cookie?.value) head += `cookie: ${ctx.cookie.value}\r\n`;
  head += `x-forwarded-for: ${clientAddress(req)}\r\nx-forwarded-proto: ${ctx.secure ? 'https' : 'http'}\r\n`;
  if (req.headers.host) head += `x-forwarded-host: ${req.headers.host}\r\n`;
  if (ctx.identity) {
    for (const name in ctx.identity) {
      const value = ctx.identity[name];
      if (INVALID_FIELD_VALUE.test(value)) throw Object.assign(new Error(`the ${name} value cannot be sent in an HTTP header`), { code: 'EDGE_INVALID_HEADER' });
      head += `${name}: ${value}\r\n`;
    }
  }
  if (chunked && req.headers['content-length'] !== undefined) throw Object.assign(new Error('a request cannot have both a length and a chunked body'), { code: 'EDGE_INVALID_HEADER' });
  return head;
}

const REQUEST_DROP_LENGTHS = lengthsOf(HOP_BY_HOP, EDGE_SET_HEADERS, NOT_FORWARDED, new Set(['cookie']));
const RESPONSE_DROP_LENGTHS = lengthsOf(HOP_BY_HOP);

/** One proxied request: the target's answer streamed to the client with back-pressure both ways. */
class Forwarding implements UpstreamHandler {
  exchange: Exchange | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly route: ShareRoute,
    private readonly onUpstreamError?: (route: ShareRoute, kind: string) => void,
  ) {}

  onHead(status: number, statusMessage: string, rawHeaders: string[]): boolean {
    const res = this.res;
    if (res.destroyed) return false;
    let listed: Set<string> | undefined;
    let dropSome = false;
    for (let i = 0; i < rawHeaders.length; i += 2) {
      if (!RESPONSE_DROP_LENGTHS.has(rawHeaders[i].length)) continue;
      const name = rawHeaders[i].toLowerCase();
      if (name === 'connection') listed = new Set(rawHeaders[i + 1].toLowerCase().split(',').map((t) => t.trim()));
      if (HOP_BY_HOP.has(name)) dropSome = true;
    }
    let out = rawHeaders;
    if (dropSome || listed) {
      out = [];
      for (let i = 0; i < rawHeaders.length; i += 2) {
        const name = rawHeaders[i].toLowerCase();
        if (!HOP_BY_HOP.has(name) && !listed?.has(name)) out.push(rawHeaders[i], rawHeaders[i + 1]);
      }
    }
    try {
      res.writeHead(status, statusMessage || undefined, out);
    } catch (err) {
      this.onError(Object.assign(err as Error, { code: 'HPE_INVALID_HEADER' }), false);
      return false;
    }
    return true;
  }

  onBody(chunk: Buffer, resume: () => void): boolean {
    if (this.res.write(chunk)) return true;
    this.res.once('drain', resume);
    return false;
  }

  onEnd(): void {
    this.res.end();
  }

  onError(err: NodeJS.ErrnoException, timedOut: boolean): void {
    const res = this.res;
    if (res.destroyed || res.writableEnded) return;
    const [status, code, message] = failure(err, timedOut, this.route.target);
    this.onUpstreamError?.(this.route, code);
    if (res.headersSent) return void res.destroy();
    answer(res, status, code, message);
  }
}

/**
 * Proxies requests to share targets. Requests go through the edge's own HTTP/1.1 client (edge/upstream.ts: keep-alive
 * connections per target origin, Node's llhttp parser; see bench/README.md for why not undici); WebSocket and other
 * upgrades through node:http. Bodies stream both ways with back-pressure, names are resolved and checked against the
 * egress policy by the connection's own lookup, and a client that goes away takes its target request with it.
 */
export class Proxy {
  private readonly upstream: UpstreamClient;

  constructor(
    private readonly meter: Meter,
    private readonly policy: EgressPolicy,
    private readonly timeoutMs: number,
    private readonly onUpstreamError?: (route: ShareRoute, kind: string) => void,
    idleMs?: number,
  ) {
    this.upstream = new UpstreamClient({ policy, timeoutMs, idleMs });
  }

  private options(route: ShareRoute, method: string, path: string, headers: OutgoingHttpHeaders, agent: http.Agent | false): https.RequestOptions {
    const target = route.target;
    const hostname = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
    return {
      protocol: target.protocol,
      hostname,
      port: target.port || (target.protocol === 'https:' ? 443 : 80),
      method,
      path,
      headers,
      agent,
      lookup: this.policy.lookup as never,
      servername: target.protocol === 'https:' && !net.isIP(hostname) ? hostname : undefined,
    };
  }

  /**
   * Sends the request to the share's target and streams the answer back. Returns the exchange, which the caller
   * aborts when the client goes away before the answer ended (server.ts does, from the one 'close' listener it has).
   */
  forward(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: ForwardContext): Exchange | undefined {
    const target = route.target;
    const denied = this.literalDenial(target);
    if (denied) return void answer(res, 403, 'forbidden', denied);
    const body = hasBody(req) ? req : null;
    const chunked = body !== null && req.headers['transfer-encoding'] !== undefined;
    const forwarding = new Forwarding(res, route, this.onUpstreamError);
    let head: string;
    try {
      head = requestHead(req, upstreamPath(target, req.url), ctx, chunked);
    } catch (err) {
      if (!body) req.resume();
      return void forwarding.onError(err as NodeJS.ErrnoException, false);
    }
    const exchange = this.upstream.request(target, { method: req.method ?? 'GET', head, body, chunked }, forwarding);
    if (!body) req.resume();
    return exchange;
  }

  /** The egress refusal of a target given as an IP literal (names are checked at connect), computed once per target. */
  private readonly literalDenials = new WeakMap<URL, string | null>();
  private literalDenial(target: URL): string | null {
    let denial = this.literalDenials.get(target);
    if (denial === undefined) {
      try {
        this.policy.checkHost(target.hostname);
        denial = null;
      } catch (err) {
        denial = (err as Error).message;
      }
      this.literalDenials.set(target, denial);
    }
    return denial;
  }

  /** An Upgrade request (WebSocket): relayed, then the two connections are spliced and metered until they close. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: ShareRoute, ctx: ForwardContext): void {
    const target = route.target;
    try {
      this.policy.checkHost(target.hostname);
    } catch (err) {
      return answerSocket(socket, 403, 'forbidden', (err as Error).message);
    }
    const headers = requestHeaders(req, ctx, new Set(['upgrade']));
    headers.connection = 'Upgrade';
    const client = target.protocol === 'https:' ? https : http;
    const upstream = client.request(this.options(route, req.method ?? 'GET', upstreamPath(target, req.url), headers, false));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      upstream.destroy();
    }, this.timeoutMs);
    socket.on('error', () => upstream.destroy());

    upstream.on('upgrade', (ures, usocket, uhead) => {
      clearTimeout(timer);
      let headText = `HTTP/1.1 ${ures.statusCode ?? 101} ${ures.statusMessage ?? 'Switching Protocols'}\r\n`;
      for (let i = 0; i < ures.rawHeaders.length; i += 2) headText += `${ures.rawHeaders[i]}: ${ures.rawHeaders[i + 1]}\r\n`;
      socket.write(headText + '\r\n');
      if (uhead.length) socket.write(uhead);
      if (head.length) usocket.write(head);
      usocket.on('error', () => socket.destroy());
      socket.on('error', () => usocket.destroy());
      usocket.on('close', () => socket.destroy());
      socket.on('close', () => usocket.destroy());
      usocket.pipe(socket);
      socket.pipe(usocket);
      this.meter.track(socket as net.Socket, route);
    });
    upstream.on('response', (ures) => {
      // the target declined the upgrade: its answer goes back as it is, and the connection closes
      clearTimeout(timer);
      let headText = `HTTP/1.1 ${ures.statusCode} ${ures.statusMessage ?? ''}\r\n`;
      const headersOut = responseHeaders(ures);
      for (const [name, value] of Object.entries(headersOut)) {
        for (const v of Array.isArray(value) ? value : [value]) headText += `${name}: ${v}\r\n`;
      }
      socket.write(`${headText}connection: close\r\n\r\n`);
      ures.pipe(socket);
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const [status, code, message] = failure(err, timedOut, target);
      this.onUpstreamError?.(route, code);
      answerSocket(socket, status, code, message);
    });
    upstream.end();
  }

  async close(): Promise<void> {
    this.upstream.close();
  }
}
