/**
 * Request inspection at the edge: the exchanges of shares with `inspect` are recorded into Redis
 * (shared/inspect/store.ts) without slowing the share.
 *
 * - A tap (edge/inspect/recording.ts) starts when the request is routed to an inspected share (edge/pipeline/requestExchange.ts and
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
import type { IncomingMessage } from 'node:http';
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
  recordExchange,
  withRecordScript,
} from '../../shared/inspect/record.js';
import type { InspectLimits, RecordedExchange } from '../../shared/inspect/store.js';
import { inspectDropped, inspectRecorded } from '../../shared/telemetry/index.js';
import type { ShareRoute } from '../types.js';
import { type Recorder, Tap } from './recording.js';

type DropReason = 'queue_full' | 'redis_unavailable' | 'redis_error' | BoundRefusal;

const QUEUE_MAX_BYTES = 64 * 1024 * 1024;
/** Batches awaiting Redis at once: a slow answer does not stop the queue from draining. */
const IN_FLIGHT = 4;
/** Exchanges queued that start the writer at once, without waiting for FLUSH_MS. */
const FULL = 256;
/** How long a finished exchange may wait for others to share its batch (well within the second a list may lag). */
const FLUSH_MS = 10;

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

export class Capture implements Recorder {
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
