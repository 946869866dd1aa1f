/**
 * Replays of recorded exchanges. The web process never reaches targets itself: it puts a replay request in its hub's
 * queue in Redis (shared/inspect/replayQueue.ts: exactly one edge takes each, hubs served round robin, at most
 * HUB_INSPECT_REPLAYS at once per edge and HUB_INSPECT_REPLAYS_PER_HUB of one hub) and waits for the answer on its
 * own channel.
 * The edge that takes it sends the recorded request through the very pools its proxy uses (edge/upstream/upstream.ts:
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
import { BoundError, recordedExchange } from '../../shared/inspect/record.js';
import { getExchange, present, summaryOf } from '../../shared/inspect/read.js';
import { type ReplayReply, type ReplayRequest, type StoredSummary } from '../../shared/inspect/store.js';
import { REDACTED, redactLines } from '../../shared/inspect/redact.js';
import { replayKeys, takeReplay, wakeReplays } from '../../shared/inspect/replayQueue.js';
import { HOP_BY_HOP } from '../../shared/hopByHop.js';
import type { Meter } from '../meter.js';
import { originForm, targetPath } from '../upstream/paths.js';
import { failure } from '../upstream/failures.js';
import { ANSWERS } from '../../shared/errors.js';
import type { ShareRoute } from '../types.js';
import type { UpstreamPools } from '../upstream/upstream.js';
import type { Capture } from './capture.js';
import { BodyTap } from './recording.js';

interface ReplayOptions {
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
  /** Replays in progress on this edge at most (more wait in their hubs' queues for this or another edge). */
  concurrency: number;
  /** Replays of one hub in progress on this edge at most: the other hubs' are taken meanwhile. */
  perHub: number;
}

const NOT_SENT = new Set([...HOP_BY_HOP, 'content-length', 'via', 'expect']);

/** Bytes of a head: a start line and `name: value\r\n` per header. */
const headBytes = (lines: string[]) => lines.reduce((n, s) => n + s.length + 2, 16);

export class Replays {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private running = 0;
  /** Replays in progress on this edge, by hub. */
  private readonly byHub = new Map<string, number>();
  private slot: (() => void) | undefined;

  constructor(private readonly options: ReplayOptions) {}

  start(): void {
    this.loop = this.run();
  }

  /** The hubs this edge carries as many replays of as it may. */
  private busyHubs(): string[] {
    const out: string[] = [];
    for (const [hubId, n] of this.byHub) if (n >= this.options.perHub) out.push(hubId);
    return out;
  }

  /**
   * Takes requests while a slot is free (the next hub's, round robin, skipping the hubs at their limit here), and
   * waits for a hint (or a second) when there is none for it.
   */
  private async run(): Promise<void> {
    const { blocking, redis, prefix } = this.options;
    const wake = replayKeys(prefix).wake;
    while (!this.stopping) {
      if (this.running >= this.options.concurrency) await new Promise<void>((resolve) => (this.slot = resolve));
      if (this.stopping) break;
      // not connected yet (the edge's start) or away: waited for, not tried and warned about
      if (redis.status !== 'ready' || blocking.status !== 'ready') {
        await untilReady([redis, blocking], 1000);
        continue;
      }
      try {
        const taken = await takeReplay(redis, prefix, this.busyHubs());
        if (taken !== 'capped' && taken !== 'empty') {
          this.begin(taken);
          continue;
        }
        await blocking.brpop(wake, 1);
      } catch (err) {
        if (this.stopping) break;
        logger.warn({ err: (err as Error).message }, 'edge: replay requests cannot be read; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  private begin(text: string): void {
    let request: ReplayRequest;
    try {
      request = JSON.parse(text) as ReplayRequest;
    } catch {
      return;
    }
    if (Date.now() > request.deadline) return; // nobody waits for it any more
    const hubId = request.hubId;
    this.running++;
    this.byHub.set(hubId, (this.byHub.get(hubId) ?? 0) + 1);
    void this.handle(request)
      .then((reply) => this.options.redis.publish(request.replyTo, JSON.stringify(reply)))
      .catch((err) => logger.warn({ err: (err as Error).message, zId: request.zId }, 'edge: replay answer not sent'))
      .finally(() => {
        this.running--;
        const n = this.byHub.get(hubId) ?? 1;
        if (n <= 1) this.byHub.delete(hubId);
        else this.byHub.set(hubId, n - 1);
        // the hub was at its limit here: its next request may now be taken (by this edge or another)
        if (n >= this.options.perHub && !this.stopping) void wakeReplays(this.options.redis, this.options.prefix).catch(() => undefined);
        const wakeUp = this.slot;
        this.slot = undefined;
        wakeUp?.();
      });
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
      return refuse(
        400,
        'invalid_request',
        `the recorded request body was cut at ${capture.limits.bodyBytes} bytes (HUB_INSPECT_BODY_BYTES); it cannot be sent again whole`,
      );
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
      const answer = await this.options.pools
        .dispatcher(route)
        .request({ method: method as Dispatcher.HttpMethod, path, headers, body: body.length || !['GET', 'HEAD'].includes(method) ? body : null });
      status = answer.statusCode;
      for (const [name, value] of Object.entries(answer.headers)) {
        if (HOP_BY_HOP.has(name)) continue;
        for (const v of Array.isArray(value) ? value : [value ?? '']) responseLines.push(name, v);
      }
      for await (const chunk of answer.body) response.add(chunk as Buffer);
    } catch (err) {
      const { code, message } = failure(err, route);
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
    let id: string;
    try {
      id = await capture.record(
        route,
        recordedExchange(
          summary,
          { lines: recorded.request.headers.flat(), body: recorded.request.body, bodyTruncated: false },
          response.captured(redactLines(responseLines)),
        ),
      );
    } catch (err) {
      if (err instanceof BoundError) return refuse(429, 'quota_exceeded', `the replay was sent (status ${status}) but not recorded: ${err.message}`);
      throw err;
    }
    return { replayId: request.replayId, ok: true, exchange: present(summaryOf(id, summary)) };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.slot?.();
    this.options.blocking.disconnect();
    await this.loop?.catch(() => undefined);
  }
}

/** Resolves when every connection is ready, or after `ms` (listeners removed either way). */
function untilReady(connections: Redis[], ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const c of connections) c.off('ready', check);
      resolve();
    };
    const check = () => {
      if (connections.every((c) => c.status === 'ready')) done();
    };
    const timer = setTimeout(done, ms);
    for (const c of connections) c.on('ready', check);
  });
}
