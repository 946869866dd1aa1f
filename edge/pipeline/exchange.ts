/**
 * What every step of the admission pipeline (edge/pipeline/steps.ts) sees: one exchange, an HTTP/1.1 request or an
 * HTTP/2 stream (requestExchange.ts) or an upgrade request on a raw socket (upgradeExchange.ts), with the way to
 * answer it, to admit it and to forward it on its own kind of connection. A TCP share's connection
 * (tcpExchange.ts) has no request: it is an `Entry`, what run.ts needs of any exchange, and passes its own list.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../../shared/errors.js';
import type { ExchangeTap } from '../inspect/tap.js';
import type { RefusalReason } from '../policy/gate.js';
import type { ShareRoute } from '../types.js';

/** The edge's own answer to an exchange it does not forward; `reason` for a share policy's refusals (counted). */
export interface Refusal {
  code: ErrorCode;
  message: string;
  headers?: Record<string, string>;
  reason?: RefusalReason;
}

/** A step that answered the exchange itself (the login hook's redirect or callback): nothing more runs. */
export const HANDLED = Symbol('handled');

/** What a step decides: go on (undefined), refuse, or stop because the step answered. */
export type Verdict = Refusal | typeof HANDLED | undefined;

/**
 * One step: synchronous when it can decide at once (no allocation, no promise on the fast path), a promise when it
 * waits (a rate limit counted in Redis, a login session checked, a TLS handshake).
 */
export type StepOf<X extends Entry> = (x: X) => Verdict | Promise<Verdict>;
export type Step = StepOf<Exchange>;

/** What run.ts needs of every way in: a request, an upgrade, a TCP connection. */
export interface Entry {
  /** The share it goes to; set for every step after the routing step. */
  readonly route: ShareRoute | undefined;
  /** Whether the client left (nothing more to do). */
  gone(): boolean;
  /** Answers the edge's refusal (a TCP connection is closed). */
  refuse(refusal: Refusal): void;
  /** Closes without an answer: a step failed to decide (a policy never lets a request through by failing). */
  fail(): void;
  /** Hands it to the target side (edge/upstream). */
  forward(): void;
}

export interface Exchange extends Entry {
  readonly req: IncomingMessage;
  /** Whether it came on the TLS listener. */
  readonly secure: boolean;
  /** The host it is routed by (routingHost of its Host). */
  readonly host: string;
  /** The client connection it came on, taken when it arrived (an HTTP/1.1 `req.socket` is gone once it is over). */
  readonly connection: Duplex;
  /** What the edge's own answers are written on (a share's error pages attach to it, edge/answers.ts). */
  readonly answers: ServerResponse | Duplex;
  /** An inspected share's recording of the exchange, from routing: told of what crosses and of the edge's own answer. */
  readonly tap: ExchangeTap | undefined;
  /** An upgrade request (answered on its raw socket), not a request with a response. */
  readonly upgrade: boolean;
  /** Headers the verified identity adds (mutual TLS, login), for the target and a rate limit by identity. */
  identity: Record<string, string> | undefined;
  /** The Cookie header the target gets once login removed the edge's own cookie. */
  cookie: { value: string | undefined } | undefined;
  /** The login session's email, and when it must be checked again (ms), for the revocation watch. */
  email: string | undefined;
  until: number | undefined;
  /** Counts the exchange into its hub's admission (edge/pipeline/limits.ts); the refusal when the hub is at its limit. */
  admit(): Refusal | undefined;
  /** The response the login hook answers on; taken back by loginDone (the hook answered) or loginPassed. */
  loginResponse(): ServerResponse;
  loginDone(res: ServerResponse): void;
  loginPassed(res: ServerResponse): void;
  /** Watches the connection with the rule that admitted it (edge/revocation.ts), once its access rules passed. */
  keep(): void;
}
