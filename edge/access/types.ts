import type { IncomingMessage, ServerResponse } from 'node:http';
import type https from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { ErrorCode } from '../../shared/errors.js';
import type { ExchangeTap } from '../inspect/tap.js';
import type { EdgeChange, ShareRoute } from '../types.js';

/** Access-control hooks (edge/access/*): mutual TLS by the hub's client certificates, and login. */
type MutualTlsDecision =
  | { ok: true; identity: { name: string; fingerprint: string; certificateId?: string } }
  | { ok: false; code: ErrorCode; message: string };
export interface MutualTlsChecker {
  load(): Promise<void>;
  onChange(change: EdgeChange): Promise<void>;
  check(hubId: string, socket: TLSSocket): MutualTlsDecision;
}
/** `pass`: the session's email, and when the session must be checked again (ms; open connections close then). */
type LoginOutcome = { kind: 'pass'; email: string; until?: number } | { kind: 'handled' };
/** What the login hook knows of the exchange: its host, scheme and origin, and an inspected share's tap (told of a refusal). */
export interface LoginContext {
  host: string;
  secure: boolean;
  origin: string;
  tap?: ExchangeTap;
}
interface LoginHandler {
  handle(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: LoginContext): Promise<LoginOutcome>;
  stripCookies(cookieHeader: string | undefined): string | undefined;
  /** Whether a session of `email` may still reach the share (its provider's patterns and the share's domains). */
  allows(email: string, route: ShareRoute): boolean;
}
export interface AccessControl {
  mutualTls?: MutualTlsChecker;
  login?: LoginHandler;
  /** TLS server options the access modules need (e.g. session resumption off so a client identity is always seen). */
  tlsOptions?: https.ServerOptions;
}
