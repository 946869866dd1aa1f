/**
 * HTTP/2 towards share targets (`targetProtocol: "h2"`, gRPC among them), on node:http2: one session per (hub, path
 * to the target, target origin), so a connection is only ever shared by one hub's requests. The connection under it
 * is made as every target connection is (the egress policy's connector, or a CONNECT stream through one of the
 * environment's agents); an https target gets TLS with ALPN h2 on it (the target's certificate is verified), an
 * http target is spoken to with prior knowledge (h2c).
 *
 * Each request is one stream: the head rebuilt as for HTTP/1.1 targets (edge/headers.ts: hop-by-hop fields dropped,
 * X-Forwarded-* and identities set) with `te: trailers` kept when the client sent it, the body streamed both ways
 * with back-pressure and without waiting for either side to finish (bidirectional streaming), the target's trailers
 * passed on (grpc-status, grpc-message; never a field a trailer may not carry, edge/headers.ts FORBIDDEN_TRAILERS),
 * and a client that goes away resetting the target's stream (CANCEL), which is how a gRPC server learns of a
 * cancellation or a passed deadline. A trailers-only answer (HEADERS ending the stream, as gRPC sends an error) is
 * passed on as headers and trailers, which every gRPC client reads alike and an HTTP/1.1 client can receive (chunked,
 * with trailers).
 */
import { createHash } from 'node:crypto';
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { buildConnector } from 'undici';
import type { EgressPolicy } from '../../shared/egress.js';
import { egressConnector } from '../egressHttp.js';
import { settleWithin } from '../../shared/timeouts.js';
import { pump } from 'edgehub-agent/pump';
import { answer, answerSocket } from '../answers.js';
import { applyToObject } from '../policy/headers.js';
import {
  cookieHost,
  declaredLength,
  EDGE_CODE_HEADER,
  FORBIDDEN_TRAILERS,
  hasBody,
  hostOnlyCookie,
  requestHeaderLines,
  type ForwardContext,
} from '../headers.js';
import { HOP_BY_HOP } from '../../shared/hopByHop.js';
import { originForm, targetPath } from './paths.js';
import { failure, failureKind, targetTimedOut, targetUnreachable } from './failures.js';
import type { ShareRoute } from '../types.js';

interface UpstreamH2Options {
  policy: EgressPolicy;
  /** Connect (TLS included) and the answer head must each take less than this. */
  timeoutMs: number;
  /** A stream silent both ways for this long is reset. */
  readTimeoutMs: number;
  ownPorts?: () => ReadonlySet<number>;
  /** How connections are made for environments served by agents (edge/agents/gateway.ts), undefined otherwise. */
  connectorFor?: (route: ShareRoute) => { key: string; connect: buildConnector.connector } | undefined;
  /** This edge's hop mark for `Via`. */
  via: string;
  onUpstreamError?: (route: ShareRoute, kind: string) => void;
  /** Idle sessions are closed after this long. */
  idleMs?: number;
}

/** Fields of a trailers-only answer that belong in the trailers. */
const TRAILER_FIELDS = new Set(['grpc-status', 'grpc-message', 'grpc-status-details-bin']);

/** Answer fields passed to the client: no pseudo-fields, no connection-specific ones. */
function passable(
  headers: IncomingHttpHeaders,
  into: Record<string, string | string[]> = {},
  only?: (name: string) => boolean,
): Record<string, string | string[]> {
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 || HOP_BY_HOP.has(name) || name === EDGE_CODE_HEADER) continue;
    if (only && !only(name)) continue;
    const value = headers[name];
    if (value !== undefined) into[name] = value as string | string[];
  }
  return into;
}

export class UpstreamH2 {
  private readonly sessions = new Map<string, Promise<ClientHttp2Session>>();
  /** Resolves once the target's SETTINGS arrived (whether it allows extended CONNECT is known then). */
  private readonly settled = new WeakMap<ClientHttp2Session, Promise<void>>();
  private readonly direct: buildConnector.connector;
  private closed = false;

  constructor(private readonly o: UpstreamH2Options) {
    this.direct = egressConnector(o.policy, { timeoutMs: o.timeoutMs, ownPorts: o.ownPorts });
  }

  /** The connection to the target, directly or through an agent, with TLS and ALPN h2 for https targets. */
  private async connection(route: ShareRoute, connect: buildConnector.connector): Promise<Duplex> {
    const target = route.target;
    const https = target.protocol === 'https:';
    const port = target.port || (https ? '443' : '80');
    const raw = await new Promise<Duplex>((resolve, reject) =>
      connect({ hostname: target.hostname, host: target.host, protocol: 'http:', port, servername: undefined } as buildConnector.Options, (err, socket) =>
        err || !socket ? reject(err ?? new Error('no connection')) : resolve(socket as unknown as Duplex),
      ),
    );
    if (!https) return raw;
    const servername = /^[\d.]+$|:/.test(target.hostname) ? undefined : target.hostname;
    return new Promise<Duplex>((resolve, reject) => {
      const secure = tls.connect({ socket: raw, servername, ALPNProtocols: ['h2'] });
      const timer = setTimeout(() => secure.destroy(targetTimedOut(target.host)), this.o.timeoutMs);
      secure.once('secureConnect', () => {
        clearTimeout(timer);
        if (secure.alpnProtocol !== 'h2') {
          secure.destroy();
          // it does not offer HTTP/2 (ALPN h2)
          return reject(targetUnreachable(target.host, 'EDGE_NOT_H2'));
        }
        resolve(secure);
      });
      secure.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** The hub's session to the route's target (made on first use, dropped when it closes or is sent away). */
  private session(route: ShareRoute): Promise<ClientHttp2Session> {
    const via = this.o.connectorFor?.(route);
    const key = `${route.hubId} ${via ? via.key : 'direct'} ${route.target.origin}`;
    let pending = this.sessions.get(key);
    if (pending) return pending;
    pending = this.connection(route, via?.connect ?? this.direct).then((socket) => {
      const session = http2.connect(route.target.origin, {
        createConnection: () => socket,
        settings: { enablePush: false, initialWindowSize: 1 << 20 },
        maxHeaderListPairs: 256,
      });
      session.setLocalWindowSize?.(8 << 20);
      this.settled.set(session, new Promise<void>((resolve) => (session.once('remoteSettings', () => resolve()), session.once('close', () => resolve()))));
      const forget = () => {
        if (this.sessions.get(key) === pending) this.sessions.delete(key);
      };
      session.on('error', forget);
      session.once('goaway', forget);
      session.once('close', forget);
      session.setTimeout(this.o.idleMs ?? 30_000, () => session.close());
      return session;
    });
    pending.catch(() => this.sessions.get(key) === pending && this.sessions.delete(key));
    this.sessions.set(key, pending);
    return pending;
  }

  /** The request head for the target's stream, or throws (a malformed request target, an identity that cannot be sent). */
  private head(req: IncomingMessage, route: ShareRoute, ctx: ForwardContext): OutgoingHttpHeaders {
    const lines = requestHeaderLines(req, ctx, this.o.via, route);
    const headers: OutgoingHttpHeaders = {
      ':method': req.method ?? 'GET',
      ':path': targetPath(route.target, originForm(req.url)),
      ':scheme': route.target.protocol === 'https:' ? 'https' : 'http',
      ':authority': req.headers.host ?? route.target.host,
    };
    for (let i = 0; i < lines.length; i += 2) {
      const name = lines[i].toLowerCase();
      if (name === 'host') continue;
      const value = lines[i + 1];
      const previous = headers[name];
      if (previous === undefined) headers[name] = value;
      else if (name === 'cookie') headers[name] = `${previous}; ${value}`;
      else headers[name] = [...[previous].flat().map(String), value];
    }
    // `te` is hop-by-hop, but "trailers" says the client takes trailers (gRPC needs it said)
    if (/\btrailers\b/i.test(String(req.headers.te ?? ''))) headers.te = 'trailers';
    const length = declaredLength(req);
    if (length !== null) headers['content-length'] = String(length);
    return headers;
  }

  /** Sends the request on its own stream to the target and relays the answer; returns the cancel function. */
  forward(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: ForwardContext): () => void {
    let headers: OutgoingHttpHeaders;
    try {
      headers = this.head(req, route, ctx);
    } catch (err) {
      req.resume();
      const f = failure(err, route);
      answer(res, f.code, f.message, {}, ctx.tap, route.policy?.errorPages);
      return () => undefined;
    }
    const body = hasBody(req);
    if (!body) req.resume();
    let up: ClientHttp2Stream | undefined;
    let cancelled = false;
    let started = false;
    let trailers: IncomingHttpHeaders | undefined;
    const fail = (err: unknown) => {
      if (cancelled || res.writableEnded) return;
      if (res.headersSent) return void res.destroy(); // a cut answer, never a forged end
      const f = failure(err, route);
      this.o.onUpstreamError?.(route, failureKind(f));
      answer(res, f.code, f.message, {}, ctx.tap, route.policy?.errorPages);
    };
    if (this.closed) {
      fail(targetUnreachable(route.target.host, 'ECONNRESET')); // the edge is stopping
      return () => undefined;
    }
    this.session(route).then(
      (session) => {
        if (cancelled) return;
        try {
          up = session.request(headers, { endStream: !body });
        } catch (err) {
          return fail(err);
        }
        const stream = up;
        const headTimer = setTimeout(() => {
          fail(targetTimedOut(route.target.host)); // no answer head in time
          stream.close(http2.constants.NGHTTP2_CANCEL);
        }, this.o.timeoutMs);
        stream.setTimeout(this.o.readTimeoutMs, () => stream.close(http2.constants.NGHTTP2_CANCEL));
        stream.on('response', (answerHeaders, flags) => {
          clearTimeout(headTimer);
          const status = Number(answerHeaders[':status']);
          if (status < 200) return;
          started = true;
          const endsHere = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
          const out = passable(answerHeaders, {}, endsHere ? (name) => !TRAILER_FIELDS.has(name) : undefined);
          // a target's cookies stay on the share's own host, as over HTTP/1.1 (headers.ts hostOnlyCookie)
          const cookies = out['set-cookie'];
          if (cookies !== undefined) {
            const host = cookieHost(req.headers.host ?? (req.headers[':authority'] as string | undefined));
            out['set-cookie'] = [cookies].flat().map((line) => hostOnlyCookie(line, host));
          }
          if (endsHere) {
            const moved = passable(answerHeaders, {}, (name) => TRAILER_FIELDS.has(name));
            if (Object.keys(moved).length) trailers = moved as IncomingHttpHeaders;
          }
          applyToObject(out, route.policy?.responseHeaders);
          try {
            res.writeHead(status, out);
          } catch {
            stream.close(http2.constants.NGHTTP2_CANCEL);
            // the target's answer head cannot be passed on (node's writeHead refused a name or value)
            return fail(targetUnreachable(route.target.host, 'HPE_INVALID_HEADER'));
          }
          // read from here on: DATA read in the same chunk as the HEADERS can be emitted before 'response' is
          stream.on('data', (chunk: Buffer) => {
            if (!res.write(chunk)) {
              stream.pause();
              res.once('drain', () => stream.resume());
            }
          });
        });
        stream.on('trailers', (t) => (trailers = t));
        stream.on('end', () => {
          if (!started || res.writableEnded) return;
          // a trailer carries no framing, routing or credentials (a Content-Length after the last chunk would cut the
          // answer of an HTTP/1.1 client): only the fields a trailer may carry go on
          if (trailers) res.addTrailers(passable(trailers, {}, (name) => !FORBIDDEN_TRAILERS.has(name)) as Record<string, string>);
          res.end();
        });
        stream.on('error', () => undefined);
        stream.on('close', () => {
          clearTimeout(headTimer);
          if (res.writableEnded || cancelled) return;
          const code = stream.rstCode ?? 0;
          // reset by the target (or its connection lost) before the answer ended
          if (!started) return fail(targetUnreachable(route.target.host, code === http2.constants.NGHTTP2_REFUSED_STREAM ? 'ECONNREFUSED' : 'ECONNRESET'));
          if (res.headersSent && !stream.readableEnded) res.destroy();
        });
        if (body) {
          req.pipe(stream);
          req.once('error', () => stream.close(http2.constants.NGHTTP2_CANCEL));
        }
      },
      (err) => fail(err),
    );
    return () => {
      cancelled = true;
      // the client went away (or reset its stream): the target's stream is reset too
      if (up && !up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
    };
  }

  /**
   * A WebSocket (an HTTP/1.1 `Upgrade: websocket`) to a share that speaks HTTP/2 to its target: carried as an
   * extended CONNECT stream (`:protocol: websocket`, RFC 8441) when the target allows it (its SETTINGS carry
   * SETTINGS_ENABLE_CONNECT_PROTOCOL), the client answered 101 with the Sec-WebSocket-Accept its key calls for (over
   * HTTP/2 there is no key nor accept: the edge, where HTTP/1.1 ends, computes it), then bytes both ways. A target
   * that does not allow it is answered 501 `not_implemented` (EH_UPGRADE_NOT_SUPPORTED_BY_TARGET: the edge cannot
   * carry it there), as is an upgrade to anything but WebSocket. `spliced` is called with the client's socket once bytes flow (metering, idle timeout).
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: ShareRoute, ctx: ForwardContext, spliced: (client: Duplex) => void): void {
    socket.on('error', () => undefined);
    const key = req.headers['sec-websocket-key'];
    if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket' || typeof key !== 'string') {
      return answerSocket(
        socket,
        'EH_UPGRADE_NOT_SUPPORTED_BY_TARGET',
        `this share speaks HTTP/2 to its target: only WebSocket upgrades are carried (Upgrade: ${String(req.headers.upgrade ?? '')})`,
        {},
        ctx.tap,
        route.policy?.errorPages,
      );
    }
    let headers: OutgoingHttpHeaders;
    try {
      headers = this.head(req, route, ctx);
    } catch (err) {
      const f = failure(err, route);
      return answerSocket(socket, f.code, f.message, {}, ctx.tap, route.policy?.errorPages);
    }
    headers[':method'] = 'CONNECT';
    headers[':protocol'] = 'websocket';
    for (const name of ['sec-websocket-key', 'content-length', 'te']) delete headers[name];
    // what the client sends before the answer waits (at most 64 KiB, as for HTTP/1.1 targets)
    const early: Buffer[] = [head];
    let earlyBytes = head.length;
    const hold = (chunk: Buffer) => {
      earlyBytes += chunk.length;
      if (earlyBytes > 64 * 1024) return void socket.destroy();
      early.push(chunk);
    };
    socket.on('data', hold);
    const fail = (err: unknown) => {
      const f = failure(err, route);
      this.o.onUpstreamError?.(route, failureKind(f));
      answerSocket(socket, f.code, f.message, {}, ctx.tap, route.policy?.errorPages);
    };
    if (this.closed) return fail(targetUnreachable(route.target.host, 'ECONNRESET')); // the edge is stopping
    this.session(route)
      .then(async (session) => {
        // the target's SETTINGS say whether it allows extended CONNECT: waited for at most the timeout, then read as they are
        await settleWithin(this.settled.get(session) ?? Promise.resolve(), this.o.timeoutMs, () => new Error('no SETTINGS in time')).catch(() => undefined);
        if (socket.destroyed) return;
        if (!session.remoteSettings.enableConnectProtocol) {
          return answerSocket(
            socket,
            'EH_UPGRADE_NOT_SUPPORTED_BY_TARGET',
            "this share's target speaks HTTP/2 and does not accept WebSockets over it (it does not allow extended CONNECT, RFC 8441)",
            {},
            ctx.tap,
            route.policy?.errorPages,
          );
        }
        const stream = session.request(headers, { endStream: false });
        stream.on('error', () => undefined);
        const timer = setTimeout(() => {
          stream.close(http2.constants.NGHTTP2_CANCEL);
          fail(targetTimedOut(route.target.host)); // no answer head in time
        }, this.o.timeoutMs);
        let answered = false;
        socket.once('close', () => stream.close(http2.constants.NGHTTP2_CANCEL));
        stream.once('close', () => {
          clearTimeout(timer);
          // the target reset the stream before it answered
          if (!answered) return fail(targetUnreachable(route.target.host, 'ECONNRESET'));
          // a reset goes on as a reset; a clean end was passed on by the pump
          if (stream.rstCode && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) socket.destroy();
        });
        stream.once('response', (answerHeaders) => {
          clearTimeout(timer);
          answered = true;
          const status = Number(answerHeaders[':status']);
          const out = passable(answerHeaders);
          if (status !== 200) {
            // the target declined: its answer goes back as it is, and the connection closes
            let text = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
            for (const [name, value] of Object.entries(out)) for (const v of [value].flat()) text += `${name}: ${v}\r\n`;
            socket.off('data', hold);
            socket.write(`${text}connection: close\r\n\r\n`, 'latin1');
            pump(stream, socket);
            return;
          }
          const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
          let text = `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n`;
          for (const name of ['sec-websocket-protocol', 'sec-websocket-extensions'])
            if (out[name] !== undefined) text += `${name}: ${[out[name]].flat().join(', ')}\r\n`;
          socket.write(`${text}\r\n`, 'latin1');
          socket.off('data', hold);
          for (const chunk of early) if (chunk.length) stream.write(chunk);
          pump(socket, stream);
          pump(stream, socket);
          spliced(socket);
        });
      })
      .catch((err) => fail(err));
  }

  async close(): Promise<void> {
    this.closed = true;
    const pending = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(
      pending.map((p) =>
        p.then(
          (s) => s.destroy(),
          () => undefined,
        ),
      ),
    );
  }
}
