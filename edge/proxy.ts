import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import type { EgressPolicy } from '../shared/egress.js';
import { answer, answerSocket } from './answers.js';
import type { Meter } from './meter.js';
import type { ShareRoute } from './types.js';

/** RFC 9110 7.6.1 connection-specific headers, plus the de-facto ones; never forwarded in either direction. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings']);

/** Headers only the edge may set towards a target: a client's own are dropped, never passed on. */
export const EDGE_SET_HEADERS = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-client-certificate-name', 'x-client-certificate-fingerprint', 'x-forwarded-email']);

/** undici sends no `Expect` (the edge already answered 100 Continue to the client itself). */
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

/** One proxied request as an undici dispatch handler: the target's answer streamed to the client with back-pressure. */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private done = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly route: ShareRoute,
    private readonly onUpstreamError?: (route: ShareRoute, kind: string) => void,
  ) {
    res.once('close', this.onClientClose);
  }

  private readonly onClientClose = () => {
    if (!this.done) this.controller?.abort(new Error('the client went away'));
  };

  private readonly onDrain = () => this.controller?.resume();

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.res.destroyed) controller.abort(new Error('the client went away'));
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    if (statusCode < 200) return; // 1xx informational: the final answer follows
    const listed = connectionListed(headers as IncomingHttpHeaders);
    const out: OutgoingHttpHeaders = {};
    for (const name in headers) {
      if (!HOP_BY_HOP.has(name) && !listed?.has(name)) out[name] = headers[name];
    }
    this.res.writeHead(statusCode, statusMessage || undefined, out);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', this.onDrain);
    }
  }

  onResponseEnd(): void {
    this.done = true;
    this.res.end();
  }

  onResponseError(_c: Dispatcher.DispatchController | undefined, err: Error): void {
    this.done = true;
    const res = this.res;
    if (res.destroyed || res.writableEnded) return;
    const [status, code, message] = failure(err as NodeJS.ErrnoException, false, this.route.target);
    this.onUpstreamError?.(this.route, code);
    if (res.headersSent) return void res.destroy();
    answer(res, status, code, message);
  }
}

/**
 * Proxies requests to share targets. Requests go through undici (one keep-alive connection pool per target origin;
 * it costs about a third less CPU per request than node:http's client, see bench/README.md); WebSocket and other
 * upgrades through node:http. Bodies stream both ways with back-pressure, names are resolved and checked against the
 * egress policy by the connection's own lookup, and a client that goes away takes its target request with it.
 */
export class Proxy {
  private readonly pools = new Map<string, Pool>();

  constructor(
    private readonly meter: Meter,
    private readonly policy: EgressPolicy,
    private readonly timeoutMs: number,
    private readonly onUpstreamError?: (route: ShareRoute, kind: string) => void,
  ) {}

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

  private pool(target: URL): Pool {
    let pool = this.pools.get(target.origin);
    if (!pool) {
      const hostname = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
      pool = new Pool(target.origin, {
        connections: 512,
        pipelining: 1,
        headersTimeout: this.timeoutMs,
        bodyTimeout: 0, // streams of any length; the client's own connection bounds them
        connectTimeout: this.timeoutMs,
        connect: {
          lookup: this.policy.lookup as never,
          servername: target.protocol === 'https:' && !net.isIP(hostname) ? hostname : undefined,
        } as never,
      });
      pool.on('connectionError', () => undefined);
      this.pools.set(target.origin, pool);
    }
    return pool;
  }

  forward(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: ForwardContext): void {
    const target = route.target;
    const denied = this.literalDenial(target);
    if (denied) return answer(res, 403, 'forbidden', denied);
    const headers = requestHeaders(req, ctx) as Record<string, string | string[]>;
    for (const name of NOT_FORWARDED) delete headers[name];
    const body = hasBody(req) ? req : null;
    const exchange = new Exchange(res, route, this.onUpstreamError);
    try {
      this.pool(target).dispatch({ origin: target.origin, path: upstreamPath(target, req.url), method: req.method ?? 'GET', headers, body }, exchange);
    } catch (err) {
      exchange.onResponseError(undefined, err as Error);
    }
    if (!body) req.resume();
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
    await Promise.all([...this.pools.values()].map((p) => p.destroy().catch(() => undefined)));
    this.pools.clear();
  }
}
