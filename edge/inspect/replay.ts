/**
 * Replays of recorded exchanges. The web process never reaches targets itself: it puts a replay request on a Redis
 * list that every edge takes from (BRPOP: exactly one edge takes each) and waits for the answer on its own channel.
 * The edge that takes it sends the recorded request through the very pools its proxy uses (edge/upstream.ts:
 * the share's hub's pool for its target, whose connector is the environment's agents or the direct connector under
 * the egress policy), so a replay goes exactly where, and only where, a live request would go. Its answer is
 * recorded as a new exchange marked `replayOf` and its bytes are metered to the share.
 *
 * What a replay sends: the recorded method, path (under the share's current target) and headers, except the values
 * that were never kept (credentials, the client certificate: `[redacted]`), hop-by-hop headers and framing; the
 * recorded body, which must have been kept whole.
 */
import type { Redis } from 'ioredis';
import type { Dispatcher } from 'undici';
import { logger } from '../../shared/logger.js';
import { getExchange, present, recordedExchange, replayKeys, summaryOf, type ReplayReply, type ReplayRequest, type StoredSummary } from '../../shared/inspect/store.js';
import { REDACTED, redactLines } from '../../shared/inspect/redact.js';
import { HOP_BY_HOP } from '../headers.js';
import type { Meter } from '../meter.js';
import { targetPath } from '../paths.js';
import { failure, originForm } from '../proxy.js';
import { ANSWERS } from '../../shared/errorAnswers.js';
import type { ShareRoute } from '../types.js';
import type { UpstreamPools } from '../upstream.js';
import { BodyTap, type Capture } from './capture.js';

export interface ReplayOptions {
  /** A connection of its own: BRPOP blocks it. */
  blocking: Redis;
  /** For reads and replies (not blocked). */
  redis: Redis;
  prefix: string;
  capture: Capture;
  routeOf: (zId: string) => ShareRoute | undefined;
  pools: UpstreamPools;
  meter: Meter;
  /** The hop mark live requests carry. */
  via: string;
  /** Replays in progress on this edge at most (more wait in the list for this or another edge). */
  concurrency?: number;
}

const NOT_SENT = new Set([...HOP_BY_HOP, 'content-length', 'via', 'expect']);

/** Bytes of a head: a start line and `name: value\r\n` per header. */
const headBytes = (lines: string[]) => lines.reduce((n, s) => n + s.length + 2, 16);

export class Replays {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private running = 0;
  private slot: (() => void) | undefined;

  constructor(private readonly options: ReplayOptions) {}

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const { blocking, prefix } = this.options;
    const list = replayKeys(prefix).requests;
    const max = this.options.concurrency ?? 8;
    while (!this.stopping) {
      if (this.running >= max) await new Promise<void>((resolve) => (this.slot = resolve));
      let item: [string, string] | null;
      try {
        item = await blocking.brpop(list, 1);
      } catch (err) {
        if (this.stopping) break;
        logger.warn({ err: (err as Error).message }, 'edge: replay requests cannot be read; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      if (!item) continue;
      let request: ReplayRequest;
      try {
        request = JSON.parse(item[1]) as ReplayRequest;
      } catch {
        continue;
      }
      if (Date.now() > request.deadline) continue; // nobody waits for it any more
      this.running++;
      void this.handle(request)
        .then((reply) => this.options.redis.publish(request.replyTo, JSON.stringify(reply)))
        .catch((err) => logger.warn({ err: (err as Error).message, zId: request.zId }, 'edge: replay answer not sent'))
        .finally(() => {
          this.running--;
          const wake = this.slot;
          this.slot = undefined;
          wake?.();
        });
    }
  }

  /** Sends the recorded request again and records the answer; the reply for the web process. */
  async handle(request: ReplayRequest): Promise<ReplayReply> {
    const { redis, prefix, capture } = this.options;
    const refuse = (status: number, error: string, message: string): ReplayReply => ({ replayId: request.replayId, ok: false, status, error, message });
    const route = this.options.routeOf(request.zId);
    if (!route || route.hubId !== request.hubId) return refuse(404, 'not_found', `share with id '${request.zId}' is not published`);
    const recorded = await getExchange(redis, prefix, request.hubId, request.zId, request.exchangeId, capture.limits);
    if (!recorded) return refuse(404, 'not_found', `exchange with id '${request.exchangeId}' not found`);
    if (recorded.request.bodyTruncated) {
      return refuse(400, 'invalid_request', `the recorded request body was cut at ${capture.limits.bodyBytes} bytes (HUB_INSPECT_BODY_BYTES); it cannot be sent again whole`);
    }
    const headers: string[] = [];
    for (const [name, value] of recorded.request.headers) {
      if (value === REDACTED || NOT_SENT.has(name.toLowerCase())) continue;
      headers.push(name, value);
    }
    headers.push('via', this.options.via);
    const body = Buffer.from(recorded.request.body, 'base64');
    const method = recorded.method;
    const response = new BodyTap(capture.limits.bodyBytes);
    const at = Date.now();
    const u = Math.round((performance.timeOrigin + performance.now()) * 1000);
    const started = performance.now();
    let status: number;
    let responseLines: string[] = [];
    try {
      const path = targetPath(route.target, originForm(recorded.path));
      const answer = await this.options.pools.dispatcher(route).request({ method: method as Dispatcher.HttpMethod, path, headers, body: body.length || !['GET', 'HEAD'].includes(method) ? body : null });
      status = answer.statusCode;
      for (const [name, value] of Object.entries(answer.headers)) {
        if (HOP_BY_HOP.has(name)) continue;
        for (const v of Array.isArray(value) ? value : [value ?? '']) responseLines.push(name, v);
      }
      for await (const chunk of answer.body) response.add(chunk as Buffer);
    } catch (err) {
      const { code, message } = failure(err as NodeJS.ErrnoException, route);
      status = ANSWERS[code].status;
      const text = Buffer.from(JSON.stringify({ error: ANSWERS[code].error, message }));
      responseLines = ['content-type', 'application/json', 'content-length', String(text.length)];
      response.add(text);
    }
    const rxBytes = headBytes(headers) + method.length + recorded.path.length + body.length;
    const txBytes = headBytes(responseLines) + response.total;
    this.options.meter.add(route, rxBytes, txBytes);
    const summary: StoredSummary = {
      at,
      u,
      d: Math.round((performance.now() - started) * 1000),
      method,
      path: recorded.path,
      status,
      rxBytes,
      txBytes,
      clientAddress: 'replay',
      edge: capture.edge,
      replayOf: recorded.id,
    };
    const id = await capture.record(
      route,
      recordedExchange(summary, { lines: recorded.request.headers.flat(), body: recorded.request.body, bodyTruncated: false }, response.captured(redactLines(responseLines))),
    );
    return { replayId: request.replayId, ok: true, exchange: present(summaryOf(id, summary)) };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.slot?.();
    this.options.blocking.disconnect();
    await this.loop?.catch(() => undefined);
  }
}
