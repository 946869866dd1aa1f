/**
 * An HTTP/1.1 request or an HTTP/2 stream (the compatibility API's request and response) as a pipeline exchange:
 * answered on its response, metered, counted and recorded when the response closes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { answer } from '../answers.js';
import { answered, revocable, settleExchange } from '../front/http2.js';
import type { Tap } from '../inspect/recording.js';
import { observeRequest } from '../telemetry.js';
import type { ShareRoute } from '../types.js';
import type { Exchange, Refusal } from './exchange.js';
import { guardOf } from './guard.js';
import type { PipelineParts } from './parts.js';

const overloaded: Refusal = {
  code: 'EH_HUB_OVERLOADED',
  message: 'the hub has too many requests in progress on this edge; try again shortly',
  headers: { 'retry-after': '1' },
};

export class RequestExchange implements Exchange {
  readonly connection: Socket;
  readonly upgrade = false;
  identity: Record<string, string> | undefined = undefined;
  cookie: { value: string | undefined } | undefined = undefined;
  email: string | undefined = undefined;
  until: number | undefined = undefined;
  /** Cancels the target request (set once forwarded). */
  private cancel: (() => void) | undefined = undefined;
  private admitted = false;
  private readonly started = performance.now();
  /** An inspected share's exchange, recorded from here whatever answers it (the target or the edge's refusal). */
  readonly tap: Tap | undefined;

  constructor(
    private readonly parts: PipelineParts,
    readonly req: IncomingMessage,
    readonly answers: ServerResponse,
    readonly secure: boolean,
    readonly host: string,
    readonly route: ShareRoute | undefined,
  ) {
    this.connection = req.socket; // the response detaches it before 'close'
    this.tap = route?.inspect ? parts.capture?.begin(route, req) : undefined;
    // 'close' comes once per answer: a plain listener, without the wrapper once() makes
    answers.on('close', () => this.ended());
  }

  private ended(): void {
    const { req, answers: res, route, parts } = this;
    // a client gone before the answer ended takes the target request with it
    if (this.cancel && !answered(req, res)) this.cancel();
    if (this.admitted && route) parts.limiter.leave(route.hubId);
    settleExchange(parts.meter, req, this.answers, this.connection, route);
    observeRequest(route?.frontendId ?? 'none', res.statusCode, (performance.now() - this.started) / 1000);
    this.tap?.finish(res);
  }

  gone(): boolean {
    return this.answers.destroyed || this.answers.writableEnded;
  }

  refuse(r: Refusal): void {
    answer(this.answers, r.code, r.message, r.headers, this.tap, this.route?.policy?.errorPages);
  }

  fail(): void {
    this.answers.destroy();
  }

  admit(): Refusal | undefined {
    if (!this.parts.limiter.enter(this.route!.hubId)) return overloaded;
    this.admitted = true;
    return undefined;
  }

  loginResponse(): ServerResponse {
    return this.answers;
  }

  loginDone(): void {}

  loginPassed(): void {}

  keep(): void {
    const route = this.route!;
    if (route.auth || route.mutualTls) this.parts.connections.watch(revocable(this.req, this.connection, route.mutualTls), guardOf(this.parts, this));
    else this.parts.connections.unwatch(this.connection);
  }

  forward(): void {
    const { req, parts } = this;
    this.cancel = parts.proxy.forward(req, this.answers, this.route!, {
      secure: this.secure,
      identity: this.identity,
      tap: this.tap,
      forwardedFor: parts.gate.addresses.forwardedFor(req),
      clientAddress: parts.gate.addresses.of(req),
      cookie: this.cookie,
    });
  }
}
