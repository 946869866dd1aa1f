/**
 * Proxies requests to share targets through undici (edge/upstream/upstream.ts: a Pool per hub and target): the request head
 * rebuilt by edge/headers.ts, the path by edge/upstream/paths.ts, bodies streamed both ways with back-pressure, 1xx answers
 * and trailers not passed on (as nginx does), a read timeout between body pieces, and a client that goes away
 * taking its target request with it. Upgrades (WebSocket) go through the same pools: relayed, then the two
 * connections are spliced and metered until either closes or both stay silent for the upgrade idle timeout.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { DomainError } from '../../shared/errors.js';
import { answer, answerSocket } from '../answers.js';
import { inTrailers, isBodyless, withoutLength } from './bodyless.js';
import { declaredLength, hasBody, requestHeaderLines, responseHeaderLines, type ForwardContext } from '../headers.js';
import type { ExchangeTap } from '../inspect/tap.js';
import type { Meter } from '../meter.js';
import { applyToLines } from '../policy/headers.js';
import { failure, failureKind, targetUnreachable } from './failures.js';
import { originForm, targetPath } from './paths.js';
import { stickyOf } from '../agents/affinity.js';
import type { ShareRoute, Sticky } from '../types.js';
import type { UpstreamPools } from './upstream.js';

/** A request that may be sent once more when a kept-alive connection closed under it before any answer came. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
const RETRYABLE = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

interface ProxyOptions {
  /** This edge's hop mark, added to `Via` (edge/pipeline/malformed.ts refuses a request that already carries it). */
  via: string;
  /** Upgraded connections silent both ways for this long are closed. */
  upgradeIdleMs: number;
  onUpstreamError?: (route: ShareRoute, kind: string) => void;
  /** Shares that speak HTTP/2 to their targets (edge/upstream/upstreamH2.ts). */
  h2?: {
    forward(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: ForwardContext): () => void;
    upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: ShareRoute, ctx: ForwardContext, spliced: (client: Duplex) => void): void;
    close(): Promise<void>;
  };
}

/** What a target exchange is aborted with when its client went away (an upgrade's client that only ended its side still reads the answer). */
const clientWentAway = (route: ShareRoute) => targetUnreachable(route.target.host, 'ECONNABORTED');

/**
 * One proxied request: the target's answer streamed to the client. On undici's core handler interface (onConnect,
 * onHeaders with the raw header lines, onData, onComplete, onError): the controller-style interface costs a wrapper
 * per request that parses every answer's header lines (and trailers) into an object the edge does not read.
 */
class Forwarding implements Dispatcher.DispatchHandler {
  private abort: ((err: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  private started = false;
  private bodyless = false;
  private cancelled = false;
  /** May be sent once more (see IDEMPOTENT) when its connection closed before any answer came. */
  retryable = false;
  /** The request's claim to an agent (a share with affinity); its setCookie goes on the answer. */
  sticky: Sticky | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly route: ShareRoute,
    private readonly options: ProxyOptions,
    private readonly tap: ExchangeTap | undefined,
    private readonly dispatcher: Dispatcher,
    private readonly request: Dispatcher.DispatchOptions,
  ) {}

  /** Hands the request to the pool (a method, not a closure made per request). */
  send(): void {
    try {
      this.dispatcher.dispatch(this.request, this);
    } catch (err) {
      this.onError(err as Error);
    }
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.cancelled) abort(clientWentAway(this.route));
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    if (status < 200) return true; // 1xx: informational, not passed on (the client got its own 100 Continue)
    this.started = true;
    const res = this.res;
    if (res.destroyed) {
      this.abort?.(clientWentAway(this.route));
      return false;
    }
    this.resume = resume;
    // 204, 304 and an answer to HEAD end with their head, whatever body the target sends after it (bodyless.ts)
    this.bodyless = isBodyless(status, res.req?.method);
    try {
      // a target's cookies stay on the share's own host (headers.ts hostOnlyCookie)
      // and the share policy's response header rules apply
      const lines = applyToLines(
        responseHeaderLines(rawHeaders, false, res.req?.headers.host ?? (res.req?.headers[':authority'] as string | undefined) ?? ''),
        this.route.policy?.responseHeaders,
      );
      // a share with cookie affinity: the cookie naming the agent chosen for this client
      if (this.sticky?.setCookie) lines.push('set-cookie', this.sticky.setCookie);
      this.tap?.head(status, lines);
      res.writeHead(status, statusText || undefined, status === 204 ? withoutLength(lines) : lines);
      if (this.bodyless) res.end();
    } catch (err) {
      // the target's answer head cannot be passed on (node's writeHead refused a name or value)
      this.abort?.(err as Error);
      this.fail(targetUnreachable(this.route.target.host, 'HPE_INVALID_HEADER'));
      return false;
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.res.destroyed || this.bodyless) return true;
    this.tap?.data(chunk);
    if (this.res.write(chunk)) return true;
    this.res.once('drain', this.resume!);
    return false;
  }

  onComplete(): void {
    // trailers are not passed on (nginx does not either): they never become headers of anything
    if (!this.res.writableEnded) this.res.end();
  }

  onError(err: Error): void {
    if (this.cancelled) return;
    // the client has its whole answer: the target's extra bytes or bad trailers only cost it this connection
    if (this.bodyless) return;
    if (this.started && inTrailers(err)) return void this.res.end();
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (!this.started && this.retryable && RETRYABLE.has(code)) {
      this.retryable = false;
      return this.send();
    }
    this.fail(err);
  }

  private fail(err: Error) {
    const res = this.res;
    if (res.destroyed || res.writableEnded) return;
    if (res.headersSent) return void res.destroy(); // the client sees a cut answer, never a forged end
    const f = failure(err, this.route);
    this.options.onUpstreamError?.(this.route, failureKind(f));
    answer(res, f.code, f.message, {}, this.tap, this.route.policy?.errorPages);
  }

  /** The client went away: the target exchange goes too. */
  cancel() {
    this.cancelled = true;
    this.abort?.(clientWentAway(this.route));
  }
}

/**
 * An upgrade request: relayed; on 101 the connections are spliced, else the answer goes back and the connection
 * closes. On the same core handler interface as Forwarding: undici's core calls onUpgrade with the raw header lines
 * (a controller-style handler is wrapped in the same adapter per request, which parses them into an object).
 */
class Upgrading implements Dispatcher.DispatchHandler {
  private abort: ((err?: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  private done = false;
  /** The request's Host: the target's cookies stay on the share's host (headers.ts hostOnlyCookie). */
  host = '';

  constructor(
    private readonly socket: Duplex,
    private readonly head: Buffer,
    private readonly route: ShareRoute,
    private readonly meter: Meter,
    private readonly options: ProxyOptions,
    /** An inspected share's tap: told of the edge's own answer to the upgrade, never of one carried through. */
    private readonly tap: ExchangeTap | undefined,
    private readonly onSpliced: (socket: Duplex) => void,
  ) {
    // a client that leaves before the target answered cancels the upgrade; reading (and keeping) what it sends
    // meanwhile is what lets its leaving be seen
    const cancel = () => {
      if (!this.done) this.abort?.(clientWentAway(this.route));
    };
    socket.on('data', this.early);
    socket.resume();
    socket.once('end', cancel);
    socket.once('close', cancel);
  }

  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly early = (chunk: Buffer) => {
    this.pendingBytes += chunk.length;
    if (this.pendingBytes > 64 * 1024) return void this.socket.destroy(); // no protocol sends this much before its 101
    this.pending.push(chunk);
  };

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.socket.destroyed) abort(clientWentAway(this.route));
  }

  onUpgrade(status: number, rawHeaders: Buffer[] | string[] | null, upstream: Duplex): void {
    this.done = true;
    const socket = this.socket;
    if (socket.destroyed) return void upstream.destroy();
    let text = `HTTP/1.1 ${status} Switching Protocols\r\n`;
    const lines = applyToLines(responseHeaderLines((rawHeaders ?? []) as Buffer[], true, this.host), this.route.policy?.responseHeaders);
    for (let i = 0; i < lines.length; i += 2) text += `${lines[i]}: ${lines[i + 1]}\r\n`;
    socket.write(`${text}\r\n`, 'latin1');
    socket.off('data', this.early);
    if (this.head.length) upstream.write(this.head);
    for (const chunk of this.pending) upstream.write(chunk);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
    // silent both ways for the idle timeout: closed (a client's socket timeout counts reads and writes)
    const client = socket as Socket;
    if (typeof client.setTimeout === 'function') {
      client.setTimeout(this.options.upgradeIdleMs, () => {
        socket.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(socket);
    socket.pipe(upstream);
    this.meter.track(client, this.route);
    this.onSpliced(socket);
  }

  private answerHead = false;

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    if (status < 200) return true;
    // the target declined the upgrade: its answer goes back as it is, and the connection closes
    this.done = true;
    this.answerHead = true;
    this.resume = resume;
    let text = `HTTP/1.1 ${status} ${statusText ?? ''}\r\n`;
    const lines = applyToLines(responseHeaderLines(rawHeaders, false, this.host), this.route.policy?.responseHeaders);
    for (let i = 0; i < lines.length; i += 2) text += `${lines[i]}: ${lines[i + 1]}\r\n`;
    this.socket.write(`${text}connection: close\r\n\r\n`, 'latin1');
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.socket.write(chunk)) return true;
    this.socket.once('drain', this.resume!);
    return false;
  }

  onComplete(): void {
    this.socket.end();
  }

  onError(err: Error): void {
    this.done = true;
    if (this.answerHead) return void this.socket.destroy();
    const f = failure(err, this.route);
    this.options.onUpstreamError?.(this.route, failureKind(f));
    answerSocket(this.socket, f.code, f.message, {}, this.tap, this.route.policy?.errorPages);
  }
}

export class Proxy {
  constructor(
    private readonly meter: Meter,
    private readonly pools: UpstreamPools,
    private readonly options: ProxyOptions,
  ) {}

  /** The target path and header lines, or the edge's own 400 / 502 written to `res`. */
  private prepare(req: IncomingMessage, route: ShareRoute, ctx: ForwardContext): { path: string; headers: string[] } | DomainError {
    try {
      return { path: targetPath(route.target, originForm(req.url)), headers: requestHeaderLines(req, ctx, this.options.via, route) };
    } catch (err) {
      return failure(err, route);
    }
  }

  /**
   * Sends the request to the share's target and streams the answer back. Returns a cancel function, which the caller
   * calls when the client goes away before the answer ended (edge/pipeline/requestExchange.ts does, from its one
   * 'close' listener).
   */
  forward(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: ForwardContext): (() => void) | undefined {
    if (route.targetProtocol === 'h2' && this.options.h2) return this.options.h2.forward(req, res, route, ctx);
    const prepared = this.prepare(req, route, ctx);
    if ('code' in prepared) {
      req.resume();
      if (prepared.code !== 'EH_REQUEST_MALFORMED') this.options.onUpstreamError?.(route, failureKind(prepared));
      return void answer(res, prepared.code, prepared.message, {}, ctx.tap, route.policy?.errorPages);
    }
    const method = req.method ?? 'GET';
    const body = hasBody(req) ? req : null;
    const length = declaredLength(req);
    if (body && length !== null) prepared.headers.push('content-length', String(length));
    if (!body) req.resume();
    // an inspected share: the exchange is recorded as it goes by (the body teed, never held back)
    const tap = ctx.tap;
    tap?.forwarded(prepared.headers, body);
    let dispatcher: Dispatcher;
    const sticky = stickyOf(req, route, ctx);
    try {
      dispatcher = this.pools.dispatcher(route, sticky);
    } catch (err) {
      const f = failure(err, route);
      return void answer(res, f.code, f.message, {}, ctx.tap, route.policy?.errorPages);
    }
    const forwarding = new Forwarding(res, route, this.options, tap, dispatcher, { method, path: prepared.path, headers: prepared.headers, body });
    forwarding.sticky = sticky;
    forwarding.retryable = !body && IDEMPOTENT.has(method);
    forwarding.send();
    return () => forwarding.cancel();
  }

  /** An Upgrade request (WebSocket): relayed, then the two connections are spliced and metered until they close. */
  upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    route: ShareRoute,
    ctx: ForwardContext,
    onSpliced: (socket: Duplex) => void = () => undefined,
  ): void {
    if (route.targetProtocol === 'h2') {
      if (!this.options.h2)
        return answerSocket(
          socket,
          'EH_UPGRADE_NOT_CARRIED',
          'this edge does not speak HTTP/2 to targets: upgrades (WebSocket) to this share are not carried',
          {},
          ctx.tap,
          route.policy?.errorPages,
        );
      // a WebSocket as an extended CONNECT stream (edge/upstream/upstreamH2.ts), spliced, metered and timed out as here
      return this.options.h2.upgrade(req, socket, head, route, ctx, (client) => {
        const s = client as Socket;
        if (typeof s.setTimeout === 'function') s.setTimeout(this.options.upgradeIdleMs, () => s.destroy());
        this.meter.track(s, route);
        onSpliced(client);
      });
    }
    const prepared = this.prepare(req, route, ctx);
    if ('code' in prepared) return answerSocket(socket, prepared.code, prepared.message, {}, ctx.tap, route.policy?.errorPages);
    const handler = new Upgrading(socket, head, route, this.meter, this.options, ctx.tap, onSpliced);
    handler.host = req.headers.host ?? '';
    try {
      this.pools
        .dispatcher(route, stickyOf(req, route, ctx))
        .dispatch(
          { method: req.method ?? 'GET', path: prepared.path, headers: prepared.headers, upgrade: String(req.headers.upgrade ?? 'websocket'), body: null },
          handler,
        );
    } catch (err) {
      handler.onError(err as Error);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.pools.close(), this.options.h2?.close()]);
  }
}
