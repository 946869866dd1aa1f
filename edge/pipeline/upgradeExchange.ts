/**
 * An upgrade request (WebSocket and the like) on its raw socket as a pipeline exchange: the edge's refusals written on
 * the socket, which then closes; once forwarded, the spliced connection is metered by the proxy and watched with the
 * rule that admitted it (edge/revocation.ts).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { answerSocket } from '../answers.js';
import type { Tap } from '../inspect/recording.js';
import type { ShareRoute } from '../types.js';
import type { Exchange, Refusal } from './exchange.js';
import { guardOf } from './guard.js';
import type { PipelineParts } from './parts.js';

const overloaded: Refusal = { code: 'EH_HUB_OVERLOADED', message: 'the hub has too many connections in progress on this edge; try again shortly' };

export class UpgradeExchange implements Exchange {
  readonly upgrade = true;
  identity: Record<string, string> | undefined = undefined;
  cookie: { value: string | undefined } | undefined = undefined;
  email: string | undefined = undefined;
  until: number | undefined = undefined;
  /** An inspected share's upgrade refused by the edge is recorded with its answer (one carried through is not). */
  readonly tap: Tap | undefined;

  constructor(
    private readonly parts: PipelineParts,
    readonly req: IncomingMessage,
    readonly connection: Duplex,
    private readonly head: Buffer,
    readonly secure: boolean,
    readonly host: string,
    readonly route: ShareRoute | undefined,
  ) {
    this.tap = route?.inspect ? parts.capture?.begin(route, req) : undefined;
  }

  get answers(): Duplex {
    return this.connection;
  }

  gone(): boolean {
    return this.connection.destroyed;
  }

  refuse(r: Refusal): void {
    answerSocket(this.connection, r.code, r.message, r.headers, this.tap, this.route?.policy?.errorPages);
    // metered as a refused request is once answered: its bytes are its share's, or no share's without one
    this.parts.meter.settle(this.connection as Socket, this.route);
  }

  fail(): void {
    this.connection.destroy();
  }

  admit(): Refusal | undefined {
    const { limiter } = this.parts;
    const hubId = this.route!.hubId;
    if (!limiter.enter(hubId)) return overloaded;
    this.connection.once('close', () => limiter.leave(hubId));
    return undefined;
  }

  /** The login hook answers on a ServerResponse: one bound to this connection, taken back when it lets the request through. */
  loginResponse(): ServerResponse {
    const res = new http.ServerResponse(this.req);
    res.assignSocket(this.connection as Socket);
    return res;
  }

  loginDone(res: ServerResponse): void {
    const done = () => {
      this.connection.end();
      this.tap?.finish(res);
    };
    // the answer may have been written (and finished) before this turn
    if (res.writableFinished) done();
    else res.once('finish', done);
  }

  loginPassed(res: ServerResponse): void {
    res.detachSocket(this.connection as Socket);
  }

  /** An upgraded connection is watched once spliced (forward). */
  keep(): void {}

  forward(): void {
    // the tap hears only of the edge's own answer to the upgrade (the proxy's failures): one carried through is not recorded
    const ctx = {
      secure: this.secure,
      identity: this.identity,
      forwardedFor: this.parts.gate.addresses.forwardedFor(this.req),
      clientAddress: this.parts.gate.addresses.of(this.req),
      cookie: this.cookie,
      tap: this.tap,
    };
    this.parts.proxy.upgrade(this.req, this.connection, this.head, this.route!, ctx, (spliced) => {
      this.parts.connections.watch(spliced, guardOf(this.parts, this));
    });
  }
}
