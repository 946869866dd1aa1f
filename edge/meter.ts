import type { Socket } from 'node:net';
import { logger } from '../shared/logger.js';
import { logThrottle } from '../shared/logThrottle.js';
import type { UsageRow } from '../shared/metrics/store.js';
import { observeBytes } from './telemetry.js';
import type { ShareRoute } from './types.js';

const flushFailures = logThrottle(30_000);

interface Counter {
  hubId: string;
  envZId: string;
  rx: number;
  tx: number;
}

/** Per-connection byte positions already attributed (bytesRead/bytesWritten are cleartext, also for TLS). */
interface SocketMark {
  read: number;
  written: number;
  /** The share the connection last carried bytes for: what is left when it closes belongs to it. */
  route: ShareRoute | undefined;
}

const FLUSH_CHUNK = 5000;
const MARK = Symbol('edgehub.meter');
type MarkedSocket = Socket & { [MARK]?: SocketMark };

/**
 * Per-share byte counters: rx = bytes received from the client (request head and body,
 * WebSocket frames in), tx = bytes sent to it (response head and body, frames out), taken from the client
 * connection's own byte counts so that what is metered is what crossed it. Each response's completion attributes
 * the connection's bytes since the previous one to the share it was for; a WebSocket tunnel is sampled at every
 * flush and when it closes.
 *
 * Counters are written as usage samples every HUB_EDGE_FLUSH_MS and on shutdown. While the store is unreachable
 * rows wait (up to HUB_EDGE_PENDING_MAX_ROWS; beyond that the oldest are dropped and the loss is logged).
 */
export class Meter {
  private counters = new Map<string, Counter>();
  private pending: UsageRow[] = [];
  private tunnels = new Set<MarkedSocket>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  /** Totals since start (for telemetry and tests). */
  readonly totals = { rx: 0, tx: 0, flushedRows: 0, droppedRows: 0 };

  constructor(
    private readonly store: (rows: UsageRow[]) => Promise<void>,
    private readonly options: { flushMs: number; pendingMaxRows: number },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.options.flushMs);
    this.timer.unref();
  }

  /** Adds bytes carried for a share. */
  add(route: ShareRoute, rx: number, tx: number): void {
    if (rx === 0 && tx === 0) return;
    let counter = this.counters.get(route.zId);
    if (!counter) {
      counter = { hubId: route.hubId, envZId: route.envZId, rx: 0, tx: 0 };
      this.counters.set(route.zId, counter);
    }
    counter.rx += rx;
    counter.tx += tx;
    observeBytes(route.frontendId, rx, tx);
    this.totals.rx += rx;
    this.totals.tx += tx;
  }

  /**
   * Attributes the connection's bytes since its last mark to `route` (or to nothing, for the edge's own answers to
   * unknown hosts) and moves the mark.
   */
  settle(socket: Socket, route: ShareRoute | undefined): void {
    const s = socket as MarkedSocket;
    let mark = s[MARK];
    if (!mark) {
      mark = { read: 0, written: 0, route: undefined };
      s[MARK] = mark;
      socket.once('close', () => this.settle(socket, mark!.route));
    }
    const read = socket.bytesRead;
    const written = socket.bytesWritten;
    if (route) {
      this.add(route, read - mark.read, written - mark.written);
      mark.route = route;
    }
    mark.read = read;
    mark.written = written;
  }

  /** A WebSocket (or other upgraded) connection carrying bytes for `route` until it closes. */
  track(socket: Socket, route: ShareRoute): void {
    const s = socket as MarkedSocket;
    this.settle(socket, route);
    this.tunnels.add(s);
    socket.once('close', () => this.tunnels.delete(s));
  }

  /**
   * Writes everything counted so far as usage samples (one row per share). Never throws. Flushes run one at a time;
   * a call made while one runs waits for the next, which starts after it and takes everything counted by then
   * (calls made meanwhile share that next one).
   */
  flush(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.flushing.then(() => {
      this.queued = undefined;
      return this.doFlush();
    });
    this.queued = next;
    this.flushing = next;
    return next;
  }

  private async doFlush(): Promise<void> {
    for (const socket of this.tunnels) this.settle(socket, socket[MARK]?.route);
    if (this.counters.size) {
      const timestamp = new Date().toISOString();
      for (const [shareId, c] of this.counters) this.pending.push({ hubId: c.hubId, shareId, envZId: c.envZId, rx: c.rx, tx: c.tx, timestamp });
      this.counters = new Map();
    }
    if (this.pending.length > this.options.pendingMaxRows) {
      const dropped = this.pending.splice(0, this.pending.length - this.options.pendingMaxRows);
      this.totals.droppedRows += dropped.length;
      logger.error(
        { rows: dropped.length, rx: dropped.reduce((n, r) => n + r.rx, 0), tx: dropped.reduce((n, r) => n + r.tx, 0), oldest: dropped[0].timestamp },
        'edge: usage samples dropped (the usage store has been unreachable for too long)',
      );
    }
    if (!this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    let stored = 0;
    try {
      // the store is all-or-nothing per call: a chunk stored before a failure is not stored again
      for (; stored < batch.length; stored += FLUSH_CHUNK) await this.store(batch.slice(stored, stored + FLUSH_CHUNK));
      this.totals.flushedRows += batch.length;
    } catch (err) {
      this.totals.flushedRows += stored;
      this.pending = batch.slice(stored).concat(this.pending);
      const message = (err as Error).message;
      // a flush every HUB_EDGE_FLUSH_MS while the store is away: said once each 30 s per error
      flushFailures(message, (repeated) => logger.warn({ err: message, waiting: this.pending.length, repeated }, 'edge: usage flush failed; will retry'));
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
