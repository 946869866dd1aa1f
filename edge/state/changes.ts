import { EventEmitter } from 'node:events';
import { logger } from '../../shared/logger.js';
import { listen, type Listener } from '../../shared/pgListen.js';
import { EDGE_CHANNEL, type EdgeChange } from '../types.js';

/**
 * The edge's view of changes: the shared LISTEN connection (shared/pgListen.ts) on edgehub_edge. It emits `change` for
 * each notification and `resync` whenever it listens anew, because notifications sent while it was away are lost and
 * a full reload is the only way to be sure nothing was missed. Reconnects back off from 100 ms to 5 s; while the
 * connection is down the edge keeps serving what it has.
 */
export class ChangeFeed extends EventEmitter<{ change: [EdgeChange]; resync: [] }> {
  private listener: Listener | undefined;

  constructor(private readonly connectionString: string) {
    super();
  }

  /** Resolves once listening for the first time (or rejects after `timeoutMs`: the edge cannot start blind). */
  async start(timeoutMs = 10_000): Promise<void> {
    this.listener ??= listen(
      EDGE_CHANNEL,
      (payload) => {
        try {
          this.emit('change', JSON.parse(payload) as EdgeChange);
        } catch (err) {
          logger.warn({ err: (err as Error).message }, 'edge: unreadable change notification');
        }
      },
      (why) => {
        if (why === 'listening') this.emit('resync');
      },
      { connectionString: this.connectionString, applicationName: 'edgehub-edge-listen', maxBackoffMs: 5000 },
    );
    await this.listener.ready(timeoutMs);
  }

  async stop(): Promise<void> {
    const listener = this.listener;
    this.listener = undefined;
    await listener?.close();
  }
}
