/**
 * Request inspection at the edge: the exchanges of shares with `inspect` are recorded into Redis
 * (shared/inspect/store.ts) without slowing the share.
 *
 * - Bodies are teed, never buffered or held back: the request body's chunks are seen as the target's connection
 *   takes them (a second 'data' listener on the paused request, which undici resumes), the answer's as they are
 *   written to the client; each side counts every byte and keeps a copy of the first HUB_INSPECT_BODY_BYTES only.
 * - A finished exchange goes into a fixed-size queue (HUB_INSPECT_QUEUE entries, and at most 64 MiB of bodies); one
 *   writer drains it into Redis in pipelined batches (a few in flight), off the request's path. When the queue is full, Redis is not
 *   connected or a write fails, the exchange is dropped and counted by reason
 *   (`edgehub_edge_inspect_dropped_total`): the share never waits for its inspector.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import { logger } from '../../shared/logger.js';
import { recordArgs, recordExchange, redactedPairs, serializeRecord, withRecordScript, type ExchangeRecord, type InspectLimits, type RecordedMessage } from '../../shared/inspect/store.js';
import { inspectDropped, inspectRecorded } from '../../shared/telemetry/index.js';
import type { ShareRoute } from '../types.js';

export type DropReason = 'queue_full' | 'redis_unavailable' | 'redis_error';

const QUEUE_MAX_BYTES = 64 * 1024 * 1024;
/** Exchanges are ordered by when they reached their edge on this clock: epoch ms with the fraction of performance.now(). */
const ORIGIN = performance.timeOrigin;
const BATCH = 256;
/** Batches awaiting Redis at once: a slow answer does not stop the queue from draining. */
const IN_FLIGHT = 4;

/** Counts every byte of one body and keeps a copy of the first `limit`. */
export class BodyTap {
  total = 0;
  private kept: Buffer[] = [];
  private keptBytes = 0;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.keptBytes >= this.limit) return;
    const part = chunk.length <= this.limit - this.keptBytes ? chunk : chunk.subarray(0, this.limit - this.keptBytes);
    this.kept.push(Buffer.from(part)); // a copy: the chunk's memory belongs to the socket it came from
    this.keptBytes += part.length;
  }

  get bytes(): number {
    return this.keptBytes;
  }

  message(headers: [string, string][]): RecordedMessage {
    const body = this.kept.length === 0 ? '' : (this.kept.length === 1 ? this.kept[0] : Buffer.concat(this.kept)).toString('base64');
    return { headers, body, bodyTruncated: this.total > this.keptBytes };
  }
}

/** Bytes of a head: the start line and each header line with its CRLF, as they cross the wire. */
const headBytes = (startLine: number, lines: readonly string[]) => {
  let n = startLine + 2 + 2;
  for (let i = 0; i < lines.length; i += 2) n += lines[i].length + lines[i + 1].length + 4;
  return n;
};

/** One exchange being recorded: what the proxy tells it as the answer goes by. */
export class Tap {
  private readonly started = performance.now();
  private readonly at = Date.now();
  private readonly t = ORIGIN + this.started;
  private readonly requestBody: BodyTap;
  private readonly responseBody: BodyTap;
  private status: number | undefined;
  private responseLines: string[] | undefined;

  constructor(
    private readonly capture: Capture,
    private readonly route: ShareRoute,
    private readonly req: IncomingMessage,
    private readonly path: string,
    private readonly requestLines: string[],
    private readonly clientAddress: string,
  ) {
    this.requestBody = new BodyTap(capture.limits.bodyBytes);
    this.responseBody = new BodyTap(capture.limits.bodyBytes);
  }

  /** The request body, seen as the target takes it: paused until undici resumes it, so nothing flows early. */
  body(req: IncomingMessage): void {
    const tap = this.requestBody;
    req.pause();
    req.on('data', (chunk: Buffer) => tap.add(chunk));
  }

  head(status: number, lines: string[]): void {
    this.status = status;
    this.responseLines = lines;
  }

  data(chunk: Buffer): void {
    this.responseBody.add(chunk);
  }

  /** The exchange is over (the answer ended, failed, or the client left): queued for the writer. */
  finish(res: ServerResponse): void {
    // the edge's own answers (502, 504, 403 ...) are recorded with the head they went out with
    const status = this.status ?? (res.headersSent ? res.statusCode : 499);
    const lines = this.responseLines ?? (res.headersSent ? Object.entries(res.getHeaders()).flatMap(([n, v]) => (Array.isArray(v) ? v.flatMap((x) => [n, String(x)]) : [n, String(v)])) : []);
    const req = this.req;
    this.capture.enqueue(this.route, {
      summary: {
        at: new Date(this.at).toISOString(),
        t: this.t,
        method: req.method ?? 'GET',
        path: this.path,
        status,
        ms: Math.round((performance.now() - this.started) * 10) / 10,
        rxBytes: headBytes((req.method?.length ?? 3) + (req.url?.length ?? 1) + 10, req.rawHeaders) + this.requestBody.total,
        txBytes: headBytes(13 + (res.statusMessage?.length ?? 0), lines) + this.responseBody.total,
        clientAddress: this.clientAddress,
        edge: this.capture.edge,
      },
      request: this.requestBody.message(redactedPairs(this.requestLines)),
      response: this.responseBody.message(redactedPairs(lines)),
    });
  }
}

/** A finished exchange waiting for the writer, already serialized: one string to keep (and for the GC to move), not a graph. */
interface Queued {
  hubId: string;
  zId: string;
  line: string;
  bytes: number;
}

export interface CaptureOptions {
  redis: Redis;
  prefix: string;
  limits: InspectLimits & { bodyBytes: number; queue: number };
  /** This edge's name, shown with each exchange. */
  edge: string;
}

export class Capture {
  private queue: Queued[] = [];
  private queuedBytes = 0;
  private writing = false;
  private inFlight = 0;
  private slot: (() => void) | undefined;
  private idle: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;
  readonly limits: CaptureOptions['limits'];
  readonly edge: string;
  /** Since start, for tests and the bench. */
  readonly counts = { recorded: 0, dropped: { queue_full: 0, redis_unavailable: 0, redis_error: 0 } as Record<DropReason, number> };

  constructor(private readonly options: CaptureOptions) {
    this.limits = options.limits;
    this.edge = options.edge;
    withRecordScript(options.redis);
  }

  /** A tap for one exchange of an inspected share. */
  begin(route: ShareRoute, req: IncomingMessage, res: ServerResponse, path: string, requestLines: string[], clientAddress: string): Tap {
    const tap = new Tap(this, route, req, path, requestLines, clientAddress);
    res.once('close', () => tap.finish(res));
    return tap;
  }

  private drop(reason: DropReason, n = 1): void {
    this.counts.dropped[reason] += n;
    inspectDropped.inc({ reason }, n);
  }

  enqueue(route: ShareRoute, record: ExchangeRecord): void {
    const bytes = record.request.body.length + record.response.body.length + 512;
    if (this.queue.length >= this.limits.queue || this.queuedBytes + bytes > QUEUE_MAX_BYTES) return this.drop('queue_full');
    const line = serializeRecord(record);
    this.queue.push({ hubId: route.hubId, zId: route.zId, line, bytes: line.length });
    this.queuedBytes += line.length;
    if (!this.writing) {
      this.writing = true;
      if (!this.inFlight) this.idle = new Promise((resolve) => (this.wake = resolve));
      setImmediate(() => void this.write());
    }
  }

  /** Drains the queue in pipelined batches, up to IN_FLIGHT batches awaiting Redis at once. */
  private async write(): Promise<void> {
    const redis = this.options.redis;
    while (this.queue.length) {
      const batch = this.queue.splice(0, BATCH);
      for (const q of batch) this.queuedBytes -= q.bytes;
      if (redis.status !== 'ready') {
        this.drop('redis_unavailable', batch.length);
        continue;
      }
      if (this.inFlight >= IN_FLIGHT) await new Promise<void>((resolve) => (this.slot = resolve));
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        const wake = this.slot;
        this.slot = undefined;
        wake?.();
        if (!this.writing && this.inFlight === 0) this.wake?.();
      });
    }
    this.writing = false;
    if (this.inFlight === 0) this.wake?.();
  }

  /** One pipeline: a script call per share of the batch. */
  private async send(batch: Queued[]): Promise<void> {
    const byShare = new Map<string, Queued[]>();
    for (const q of batch) {
      const key = `${q.hubId} ${q.zId}`;
      const group = byShare.get(key);
      if (group) group.push(q);
      else byShare.set(key, [q]);
    }
    const groups = [...byShare.values()];
    const pipeline = this.options.redis.pipeline();
    const scripted = pipeline as unknown as { inspectRecord(...args: unknown[]): void };
    for (const group of groups) scripted.inspectRecord(...recordArgs(this.options.prefix, group[0].hubId, group[0].zId, this.limits, group.map((q) => q.line)));
    try {
      const results = (await pipeline.exec()) ?? [];
      let failed = 0;
      groups.forEach((group, i) => {
        if (!results[i] || results[i][0]) failed += group.length;
      });
      if (failed) {
        this.drop('redis_error', failed);
        logger.warn({ failed, err: results.find(([e]) => e)?.[0]?.message }, 'edge: inspected exchanges not recorded');
      }
      this.counts.recorded += batch.length - failed;
      inspectRecorded.inc(batch.length - failed);
    } catch (err) {
      this.drop('redis_error', batch.length);
      logger.warn({ err: (err as Error).message, exchanges: batch.length }, 'edge: inspected exchanges not recorded');
    }
  }

  /** Records one exchange at once (a replay, whose caller waits for its id). */
  record(route: ShareRoute, record: ExchangeRecord): Promise<string> {
    return recordExchange(this.options.redis, this.options.prefix, route.hubId, route.zId, this.limits, record).then((id) => {
      this.counts.recorded++;
      inspectRecorded.inc();
      return id;
    });
  }

  /** Resolves once everything queued so far was written or dropped. */
  flushed(): Promise<void> {
    return this.writing || this.inFlight ? this.idle : Promise.resolve();
  }
}
