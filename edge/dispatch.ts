/**
 * What the edge does with each request and each upgrade it accepts, on every listener and protocol: the request
 * refusals, routing by host, mutual TLS and login, per-hub admission, the watch that closes a connection whose
 * access is revoked, and the hand-over to the proxy. startEdge (edge/server.ts) builds the parts and the listeners.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { ErrorCode } from '../shared/errors.js';
import { logger } from '../shared/logger.js';
import type { AccessControl } from './access/types.js';
import { answer, answerSocket, useErrorPages, watchSocketAnswer } from './answers.js';
import { answered, revocable, settleExchange } from './http2.js';
import type { Capture } from './inspect/capture.js';
import type { HubLimiter } from './limits.js';
import type { Meter } from './meter.js';
import { ipAdmits } from './policy/compile.js';
import type { PolicyGate, PolicyRefusal, Verdict } from './policy/gate.js';
import type { ForwardContext, Proxy } from './proxy.js';
import { requestRefusal } from './refusals.js';
import type { Guard, OpenConnections } from './revocation.js';
import { type RouteTable, routingHost } from './routes.js';
import { observePolicyRefusal, observeRequest } from './telemetry.js';
import type { ShareRoute } from './types.js';

export interface DispatchParts {
  routes: RouteTable;
  access: AccessControl;
  limiter: HubLimiter;
  connections: OpenConnections;
  proxy: Proxy;
  meter: Meter;
  /** This edge's hop mark (loops are refused). */
  mark: string;
  /** Records the exchanges of shares with `inspect`, the edge's refusals included (edge/inspect/capture.ts). */
  capture?: Capture;
  /** Shares' traffic policies (edge/policy), judged before their other access rules. */
  gate: PolicyGate;
}

/**
 * Runs `next` with a policy's verdict, at once when it is known, or when it comes (unless `gone()` says the client left
 * meanwhile). A verdict that fails to come closes the exchange: a policy never lets a request through by failing.
 */
function judged(verdict: Verdict | Promise<Verdict>, gone: () => boolean, next: (refusal: PolicyRefusal | undefined) => void, fail: () => void): void {
  if (!(verdict instanceof Promise)) return next(verdict);
  verdict.then(
    (v) => {
      if (!gone()) next(v);
    },
    (err) => {
      logger.error({ err: (err as Error).message }, 'edge: share policy not judged');
      fail();
    },
  );
}

/** The request and upgrade handlers of the edge's listeners (`secure`: the TLS listener's). */
export function requestDispatch({ routes, access, limiter, connections, proxy, meter, mark, capture, gate }: DispatchParts) {
/**
 * Whether the connection may reach `route`: its client certificate for a mutual-TLS share. `connection` is the one the
 * request came on, taken when the request arrived: an HTTP/1.1 request's `req.socket` is gone once the exchange is
 * over, and revocation asks again later.
 */
const identityOf = (route: ShareRoute, connection: Duplex | undefined, secure: boolean): { ok: true; headers?: Record<string, string> } | { ok: false; code: ErrorCode; message: string } => {
  if (!route.mutualTls) return { ok: true };
  if (!secure) return { ok: false, code: 'EH_MTLS_REQUIRED', message: 'this share requires mutual TLS: connect with https and present a client certificate of its hub' };
  if (!access.mutualTls) return { ok: false, code: 'EH_MTLS_UNAVAILABLE', message: 'mutual TLS is not available on this edge' };
  const decision = access.mutualTls.check(route.hubId, connection as TLSSocket);
  if (!decision.ok) return decision;
  return { ok: true, headers: { 'x-client-certificate-name': decision.identity.name, 'x-client-certificate-fingerprint': decision.identity.fingerprint } };
};

const refusal = (req: IncomingMessage, host: string) => requestRefusal(req, host, mark);

/** The rule that keeps an open connection of `route` (reached at `host`) admitted; see edge/revocation.ts. */
const guardOf = (host: string, route: ShareRoute, connection: Duplex, secure: boolean, email: string | undefined, until: number | undefined, req: IncomingMessage): Guard => () => {
  if (until !== undefined && Date.now() >= until) return 'the login session is due to be checked again';
  const current = routes.lookup(host);
  if (!current || current.zId !== route.zId) return 'the share is no longer published at this address';
  const policy = current.policy;
  if (policy && (policy.allow || policy.deny) && !ipAdmits(policy, gate.addresses.of(req))) return "the share's IP rules no longer admit the client address";
  const identity = identityOf(current, connection, secure);
  if (!identity.ok) return identity.message;
  if (email !== undefined && current.auth) {
    if (current.auth.id !== route.auth?.id) return "the share's auth provider changed";
    if (!access.login?.allows(email, current)) return `${email} may no longer reach the share`;
  }
  return undefined;
};

const handle = (secure: boolean) => (req: IncomingMessage, res: ServerResponse) => {
  const host = routingHost(req.headers.host);
  const route = routes.lookup(host);
  const socket = req.socket; // res detaches it before 'close'
  const started = performance.now();
  let cancel: (() => void) | undefined;
  let admitted = false;
  // an inspected share's exchange is recorded from here, whatever answers it (the target or the edge's refusal)
  const tap = route?.inspect ? capture?.begin(route, req) : undefined;
  // 'close' comes once per answer: a plain listener, without the wrapper once() makes
  res.on('close', () => {
    // a client gone before the answer ended takes the target request with it
    if (cancel && !answered(req, res)) cancel();
    if (admitted && route) limiter.leave(route.hubId);
    settleExchange(meter, req, socket, route);
    observeRequest(route?.frontendId ?? 'none', res.statusCode, (performance.now() - started) / 1000);
    tap?.finish(res);
  });
  const refused = refusal(req, host);
  if (refused) return answer(res, ...refused);
  if (!route) return answer(res, 'EH_SHARE_NOT_PUBLISHED', host ? `no share is published at ${host}` : 'the request names no host');
  const policy = route.policy;
  const gone = () => res.destroyed || res.writableEnded;
  const refuse = (r: PolicyRefusal) => {
    observePolicyRefusal(route.zId, r.reason);
    answer(res, r.code, r.message, r.headers);
  };
  // a rate limit by identity is counted once the share's other rules have verified one
  const forward = (ctx: ForwardContext) => {
    if (!policy?.rate || policy.rate.by !== 'identity') return void (cancel = proxy.forward(req, res, route, ctx));
    judged(gate.limitIdentity(route, policy, req, ctx.identity), gone, (r) => (r ? refuse(r) : void (cancel = proxy.forward(req, res, route, ctx))), () => res.destroy());
  };
  const proceed = () => {
    const identity = identityOf(route, socket, secure);
    if (!identity.ok) return answer(res, identity.code, identity.message);
    if (!limiter.enter(route.hubId)) return answer(res, 'EH_HUB_OVERLOADED', 'the hub has too many requests in progress on this edge; try again shortly', { 'retry-after': '1' });
    admitted = true;
    const ctx: ForwardContext = { secure, identity: identity.headers, tap, forwardedFor: gate.addresses.forwardedFor(req) };
    if (!route.auth) {
      if (route.mutualTls) connections.watch(revocable(req, socket, true), guardOf(host, route, socket, secure, undefined, undefined, req));
      else connections.unwatch(socket);
      return forward(ctx);
    }
    if (!access.login) return answer(res, 'EH_LOGIN_UNAVAILABLE', 'this share requires login, which is not available on this edge');
    const login = access.login;
    const origin = `${secure ? 'https' : 'http'}://${req.headers.host}`;
    login
      .handle(req, res, route, { host, secure, origin })
      .then((outcome) => {
        if (outcome.kind === 'handled') return;
        ctx.identity = { ...ctx.identity, 'x-forwarded-email': outcome.email };
        ctx.cookie = { value: login.stripCookies(req.headers.cookie) };
        if (res.destroyed) return; // the client left during the login check
        connections.watch(revocable(req, socket, route.mutualTls), guardOf(host, route, socket, secure, outcome.email, outcome.until, req));
        forward(ctx);
      })
      .catch((err) => {
        logger.error({ err: (err as Error).message, zId: route.zId }, 'edge: login failed');
        answer(res, 'EH_IDP_UNREACHABLE', 'the identity provider could not be reached');
      });
  };
  if (!policy) return proceed();
  // the share's policy first: IP rules, rate limit, basic auth, maintenance (edge/policy/gate.ts)
  if (policy.errorPages) useErrorPages(res, policy.errorPages);
  judged(gate.check(route, policy, req), gone, (r) => (r ? refuse(r) : proceed()), () => res.destroy());
};

const upgrade = (secure: boolean) => (req: IncomingMessage, socket: Duplex, head: Buffer) => {
  const host = routingHost(req.headers.host);
  const route = routes.lookup(host);
  // an inspected share's upgrade refused by the edge is recorded with its answer (one carried through is not)
  const tap = route?.inspect ? capture?.begin(route, req) : undefined;
  tap?.upgrading(socket);
  const refused = refusal(req, host);
  if (refused) return answerSocket(socket, ...refused);
  if (!route) {
    meter.settle(socket as Socket, undefined);
    return answerSocket(socket, 'EH_SHARE_NOT_PUBLISHED', `no share is published at ${host}`);
  }
  const policy = route.policy;
  const gone = () => socket.destroyed;
  const refuse = (r: PolicyRefusal) => {
    observePolicyRefusal(route.zId, r.reason);
    answerSocket(socket, r.code, r.message, r.headers);
  };
  const carry = (ctx: ForwardContext, email: string | undefined, until?: number) => {
    const go = () => proxy.upgrade(req, socket, head, route, ctx, spliced(email, until));
    if (!policy?.rate || policy.rate.by !== 'identity') return go();
    judged(gate.limitIdentity(route, policy, req, ctx.identity), gone, (r) => (r ? refuse(r) : go()), () => socket.destroy());
  };
  const spliced = (email: string | undefined, until?: number) => (s: Duplex) => {
    watchSocketAnswer(s, undefined);
    connections.watch(s, guardOf(host, route, socket, secure, email, until, req));
  };
  const proceed = () => {
    const identity = identityOf(route, socket, secure);
    if (!identity.ok) return answerSocket(socket, identity.code, identity.message);
    if (!limiter.enter(route.hubId)) return answerSocket(socket, 'EH_HUB_OVERLOADED', 'the hub has too many connections in progress on this edge; try again shortly');
    socket.once('close', () => limiter.leave(route.hubId));
    const ctx: ForwardContext = { secure, identity: identity.headers, forwardedFor: gate.addresses.forwardedFor(req) };
    if (!route.auth) return carry(ctx, undefined);
    if (!access.login) return answerSocket(socket, 'EH_LOGIN_UNAVAILABLE', 'this share requires login, which is not available on this edge');
    // the login hook answers on a ServerResponse: give it one bound to this connection, and take the socket back
    // when it lets the request through
    const login = access.login;
    const res = new http.ServerResponse(req);
    res.assignSocket(socket as Socket);
    login
      .handle(req, res, route, { host, secure, origin: `${secure ? 'https' : 'http'}://${req.headers.host}` })
      .then((outcome) => {
        if (outcome.kind === 'handled') {
          const done = () => {
            socket.end();
            tap?.finish(res);
          };
          // the answer may have been written (and finished) before this turn
          if (res.writableFinished) done();
          else res.once('finish', done);
          return;
        }
        res.detachSocket(socket as Socket);
        ctx.identity = { ...ctx.identity, 'x-forwarded-email': outcome.email };
        ctx.cookie = { value: login.stripCookies(req.headers.cookie) };
        carry(ctx, outcome.email, outcome.until);
      })
      .catch(() => answerSocket(socket, 'EH_IDP_UNREACHABLE', 'the identity provider could not be reached'));
  };
  if (!policy) return proceed();
  if (policy.errorPages) useErrorPages(socket, policy.errorPages);
  judged(gate.check(route, policy, req), gone, (r) => (r ? refuse(r) : proceed()), () => socket.destroy());
};

  return { handle, upgrade };
}
