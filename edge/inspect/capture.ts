/**
 * Request inspection at the edge: the exchanges of shares with `inspect` are recorded into Redis
 * (shared/inspect/store.ts) without slowing the share.
 *
 * - A tap starts when the request is routed to an inspected share (edge/pipeline/requestExchange.ts and
 *   upgradeExchange.ts) and ends with the exchange, so the edge's own refusals (login, mutual TLS, admission, egress
 *   policy, no agent) are recorded with their status and answer, as well as the exchanges carried to the target.
 * - Bodies are teed, never buffered or held back: the request body's chunks are seen as the target's connection
 *   takes them (a second 'data' listener on the paused request, which undici resumes), the answer's as they are
 *   written to the client; each side counts every byte and keeps a copy of the first HUB_INSPECT_BODY_BYTES only.
 * - A finished exchange is queued as it is (its summary and its detail: header lines as they crossed, credentials
 *   replaced, base64 only of a body that exists) in a fixed-size queue (HUB_INSPECT_QUEUE entries, and at most 64 MiB);
 *   one writer drains it into Redis every FLUSH_MS (or at once when FULL are queued) in pipelined batches, a few in
 *   flight. Each batch of a share is serialized once (one JSON text for its summaries, one for its details) and
 *   stored as one entry (shared/inspect/store.ts), so that the serialization, the script call, the trims, the live
 *   message and the round trip are paid per batch, not per exchange. When the queue is full, Redis is not connected,
 *   a write fails or a bound of the hub refuses it (shared/inspect/store.ts), the exchange is dropped and counted by
 *   reason (`edgehub_edge_inspect_dropped_total`): the share never waits for its inspector.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Redis } from 'ioredis';
import { logger } from '../../shared/logger.js';
import { logThrottle } from '../../shared/logThrottle.js';
import {
  BATCH,
  ENTRY_BYTES,
  type BoundRefusal,
  isBoundRefusal,
  recordArgs,
  recordedBytes,
  recordedExchange,
  recordExchange,
  withRecordScript,
} from '../../shared/inspect/record.js';
import { type CapturedMessage, type InspectLimits, type RecordedExchange, type StoredSummary } from '../../shared/inspect/store.js';
import { isForm, redactForm, redactLines, redactQuery } from '../../shared/inspect/redact.js';
import { inspectDropped, inspectRecorded } from '../../shared/telemetry/index.js';
import { CALLBACK_PATH } from '../access/login/index.js';
import { edgeAnswer, watchSocketAnswer } from '../answers.js';
import { clientAddress, EDGE_SET_HEADERS } from '../headers.js';
import { originForm } from '../upstream/paths.js';
import type { ShareRoute } from '../types.js';
import type { ExchangeTap } from './tap.js';

type DropReason = 'queue_full' | 'redis_unavailable' | 'redis_error' | BoundRefusal;

const QUEUE_MAX_BYTES = 64 * 1024 * 1024;
/** Exchanges are ordered by when they reached their edge on this clock: epoch µs from performance.now(). */
const ORIGIN = performance.timeOrigin;
/** Batches awaiting Redis at once: a slow answer does not stop the queue from draining. */
const IN_FLIGHT = 4;
/** Exchanges queued that start the writer at once, without waiting for FLUSH_MS. */
const FULL = 256;
/** How long a finished exchange may wait for others to share its batch (well within the second a list may lag). */
const FLUSH_MS = 10;

/** Counts every byte of one body and keeps a copy of the first `limit`. */
export class BodyTap {
  total = 0;
  private kept: Buffer[] | undefined;
  private keptBytes = 0;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.keptBytes >= this.limit) return;
    const part = chunk.length <= this.limit - this.keptBytes ? chunk : chunk.subarray(0, this.limit - this.keptBytes);
    (this.kept ??= []).push(Buffer.from(part)); // a copy: the chunk's memory belongs to the socket it came from
    this.keptBytes += part.length;
  }

  get bytes(): number {
    return this.keptBytes;
  }

  /**
   * The message with these (already redacted) header lines; base64 only when a body was kept. A form body
   * (`form`: sent as application/x-www-form-urlencoded) has its listed fields redacted.
   */
  captured(lines: readonly string[], form = false): CapturedMessage {
    const kept = this.kept;
    let bytes = kept === undefined ? undefined : kept.length === 1 ? kept[0] : Buffer.concat(kept);
    if (bytes && form) bytes = redactForm(bytes);
    const body = bytes === undefined ? '' : bytes.toString('base64');
    return { lines, body, bodyTruncated: this.total > this.keptBytes };
  }
}

/** Bytes of a head: the start line and each header line with its CRLF, as they cross the wire. */
const headBytes = (startLine: number, lines: readonly string[]) => {
  let n = startLine + 2 + 2;
  for (let i = 0; i < lines.length; i += 2) n += lines[i].length + lines[i + 1].length + 4;
  return n;
};

/**
 * The request's path as recorded: origin-form, the listed query parameters redacted (shared/inspect/redact.ts); the
 * query of the edge's own login callback (a one-time code) is not kept at all.
 */
function recordedPath(url: string | undefined): string {
  let path: string;
  try {
    path = originForm(url);
  } catch {
    path = url ?? '/';
  }
  return path.startsWith(CALLBACK_PATH) && path.includes('?') ? `${path.slice(0, path.indexOf('?'))}?[redacted]` : redactQuery(path);
}

/**
 * A refused request's header lines as the client sent them, without those only the edge may set towards a target
 * (X-Forwarded-*, verified identities, and any name with `_`, which a live request loses too): a replay of it must not
 * carry an identity the client claimed.
 */
function clientLines(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (name.includes('_') || EDGE_SET_HEADERS.has(name)) continue;
    out.push(raw[i], raw[i + 1]);
  }
  return out;
}

/** Header lines of an answer the edge wrote itself (no target answer went by): those set on it, and those of answer(). */
function writtenLines(res: ServerResponse, own: Record<string, string | number> | undefined): string[] {
  const out: string[] = [];
  for (const headers of [res.getHeaders(), own ?? {}]) {
    for (const name in headers) {
      const value = headers[name];
      if (Array.isArray(value)) for (const v of value) out.push(name, String(v));
      else if (value !== undefined) out.push(name, String(value));
    }
  }
  return out;
}

/** One exchange being recorded, from routing to its end: what the proxy tells it as the answer goes by. */
export class Tap implements ExchangeTap {
  private readonly started = performance.now();
  private readonly at = Date.now();
  private requestBody: BodyTap | undefined;
  private responseBody: BodyTap | undefined;
  /** The head sent to the target; undefined while (or when) the edge did not forward the request. */
  private requestLines: string[] | undefined;
  private status: number | undefined;
  private responseLines: string[] | undefined;
  /** Read now: the request lets go of its socket before the exchange ends. */
  private readonly clientAddress: string;

  constructor(
    private readonly capture: Capture,
    private readonly route: ShareRoute,
    private readonly req: IncomingMessage,
  ) {
    this.clientAddress = clientAddress(req);
  }

  /** The request goes to the target with these header lines; its body, if any, is seen as the target takes it. */
  forwarded(lines: string[], body: IncomingMessage | null): void {
    this.requestLines = lines;
    if (!body) return;
    const tap = (this.requestBody = new BodyTap(this.capture.limits.bodyBytes));
    // paused until undici resumes it, so nothing flows early
    body.pause();
    body.on('data', (chunk: Buffer) => tap.add(chunk));
  }

  head(status: number, lines: string[]): void {
    this.status = status;
    this.responseLines = lines;
  }

  data(chunk: Buffer): void {
    (this.responseBody ??= new BodyTap(this.capture.limits.bodyBytes)).add(chunk);
  }

  /** The exchange is over (the answer ended, failed, or the client left): serialized and queued for the writer. */
  finish(res: ServerResponse): void {
    if (!this.capture.hasRoom()) return; // dropped and counted before any work is spent on it
    // the edge's own answers (a refusal, 502, 504 ...) are recorded with the head and body they went out with
    let responseBody = this.responseBody;
    let lines = this.responseLines;
    if (lines === undefined) {
      const own = edgeAnswer(res);
      lines = res.headersSent ? writtenLines(res, own?.headers) : [];
      if (own !== undefined && responseBody === undefined) (responseBody = new BodyTap(this.capture.limits.bodyBytes)).add(Buffer.from(own.body));
    }
    this.record(this.status ?? (res.headersSent ? res.statusCode : 499), res.statusMessage?.length ?? 0, lines, responseBody);
  }

  /**
   * An upgrade request (WebSocket) of the share, from its routing: the edge's refusal of it on the raw socket
   * (answers.ts answerSocket) is recorded with the answer it got; an upgrade carried through is not recorded.
   */
  upgrading(socket: Duplex): void {
    watchSocketAnswer(socket, (status, reason, lines, body) => {
      watchSocketAnswer(socket, undefined);
      if (!this.capture.hasRoom()) return;
      const responseBody = new BodyTap(this.capture.limits.bodyBytes);
      responseBody.add(Buffer.from(body));
      this.record(status, reason.length, lines, responseBody);
    });
  }

  private record(status: number, reasonLength: number, lines: string[], responseBody: BodyTap | undefined): void {
    const req = this.req;
    const method = req.method ?? 'GET';
    // a forwarded request is recorded as the target received it; a refused one as the client sent it (clientLines)
    const requestLines = this.requestLines ?? clientLines(req.rawHeaders);
    const requestBody = this.requestBody;
    const responseTotal = responseBody?.total ?? 0;
    const summary: StoredSummary = {
      at: this.at,
      u: Math.round((ORIGIN + this.started) * 1000),
      method,
      path: recordedPath(req.url),
      status,
      d: Math.round((performance.now() - this.started) * 1000),
      rxBytes: headBytes(method.length + (req.url?.length ?? 1) + 10, req.rawHeaders) + (requestBody?.total ?? 0),
      txBytes: headBytes(13 + reasonLength, lines) + responseTotal,
      clientAddress: this.clientAddress,
      edge: this.capture.edge,
    };
    const empty = { body: '', bodyTruncated: false };
    this.capture.enqueue(
      this.route,
      recordedExchange(
        summary,
        requestBody ? requestBody.captured(redactLines(requestLines), isForm(requestLines)) : { lines: redactLines(requestLines), ...empty },
        responseBody ? responseBody.captured(redactLines(lines)) : { lines: redactLines(lines), ...empty },
      ),
    );
  }
}

/** A finished exchange waiting for the writer, with its share and its size. */
interface Queued {
  hubId: string;
  zId: string;
  exchange: RecordedExchange;
  bytes: number;
}

interface CaptureOptions {
  redis: Redis;
  prefix: string;
  limits: InspectLimits & { bodyBytes: number; queue: number };
  /** This edge's name, shown with each exchange. */
  edge: string;
}

const dropsSaid = logThrottle(5000);

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
  readonly counts = {
    recorded: 0,
    dropped: { queue_full: 0, redis_unavailable: 0, redis_error: 0, bound_bytes: 0, bound_shares: 0 } as Record<DropReason, number>,
  };

  constructor(private readonly options: CaptureOptions) {
    this.limits = options.limits;
    this.edge = options.edge;
    withRecordScript(options.redis);
  }

  /** A tap for one exchange of an inspected share, from its routing; the caller calls its finish() when the response closes. */
  begin(route: ShareRoute, req: IncomingMessage): Tap {
    return new Tap(this, route, req);
  }

  private drop(reason: DropReason, n = 1, err?: string): void {
    this.counts.dropped[reason] += n;
    inspectDropped.inc({ reason }, n);
    // at most one line per reason each 5 s: an outage of Redis or a flood would otherwise write one per batch
    dropsSaid(reason, (repeated) => logger.warn({ reason, exchanges: n, repeated, err }, 'edge: inspected exchanges not recorded'));
  }

  /** Whether the queue takes one more exchange; when not, the drop is counted. */
  hasRoom(): boolean {
    if (this.queue.length < this.limits.queue && this.queuedBytes < QUEUE_MAX_BYTES) return true;
    this.drop('queue_full');
    return false;
  }

  /** One finished exchange for the writer, or dropped and counted when the queue is full. */
  enqueue(route: ShareRoute, exchange: RecordedExchange): void {
    const bytes = recordedBytes(exchange);
    if (this.queue.length >= this.limits.queue || this.queuedBytes + bytes > QUEUE_MAX_BYTES) return this.drop('queue_full');
    this.queue.push({ hubId: route.hubId, zId: route.zId, exchange, bytes });
    this.queuedBytes += bytes;
    if (!this.writing) {
      this.writing = true;
      if (!this.inFlight) this.idle = new Promise((resolve) => (this.wake = resolve));
      this.timer = setTimeout(this.flush, FLUSH_MS);
    } else if (this.timer && this.queue.length >= FULL) {
      // a full queue goes at once
      clearTimeout(this.timer);
      this.timer = undefined;
      setImmediate(this.flush);
    }
  }

  private timer: NodeJS.Timeout | undefined;
  private readonly flush = () => {
    this.timer = undefined;
    void this.write();
  };

  /** Drains the queue in pipelined batches of at most BATCH, up to IN_FLIGHT batches awaiting Redis at once. */
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
      // the requests that came in meanwhile are served before the next batch is serialized
      if (this.queue.length) await new Promise((resolve) => setImmediate(resolve));
    }
    this.writing = false;
    if (this.inFlight === 0) this.wake?.();
  }

  /** One pipeline: a script call per share of the batch (more when a share's details outgrow an entry). */
  private async send(batch: Queued[]): Promise<void> {
    const entries: Queued[][] = [];
    const open = new Map<string, { entry: Queued[]; bytes: number }>();
    for (const q of batch) {
      const key = `${q.hubId} ${q.zId}`;
      let current = open.get(key);
      if (!current || current.bytes + q.bytes > ENTRY_BYTES) {
        current = { entry: [], bytes: 0 };
        open.set(key, current);
        entries.push(current.entry);
      }
      current.entry.push(q);
      current.bytes += q.bytes;
    }
    const pipeline = this.options.redis.pipeline();
    const scripted = pipeline as unknown as { inspectRecord(...args: unknown[]): void };
    for (const entry of entries)
      scripted.inspectRecord(
        ...recordArgs(
          this.options.prefix,
          entry[0].hubId,
          entry[0].zId,
          this.limits,
          entry.map((q) => q.exchange),
        ),
      );
    try {
      const results = (await pipeline.exec()) ?? [];
      let failed = 0;
      let refused = 0;
      entries.forEach((entry, i) => {
        const answer = results[i]?.[1];
        if (!results[i] || results[i][0]) failed += entry.length;
        else if (isBoundRefusal(answer)) {
          // a bound of the hub (or of all hubs) left no room: dropped and counted like any other
          this.drop(answer, entry.length);
          refused += entry.length;
        }
      });
      if (failed) this.drop('redis_error', failed, results.find(([e]) => e)?.[0]?.message);
      this.counts.recorded += batch.length - failed - refused;
      inspectRecorded.inc(batch.length - failed - refused);
    } catch (err) {
      this.drop('redis_error', batch.length, (err as Error).message);
    }
  }

  /** Records one exchange at once (a replay, whose caller waits for its id). */
  record(route: ShareRoute, exchange: RecordedExchange): Promise<string> {
    return recordExchange(this.options.redis, this.options.prefix, route.hubId, route.zId, this.limits, exchange).then((id) => {
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
