import { EventEmitter } from 'node:events';
import pg from 'pg';
import { logger } from '../shared/logger.js';
import { EDGE_CHANNEL, type EdgeChange } from './types.js';

/**
 * The edge's view of changes: one PostgreSQL connection LISTENing on edgehub_edge. It emits `change` for each
 * notification and `resync` whenever it (re)connects, because notifications sent while it was away are lost and a
 * full reload is the only way to be sure nothing was missed. Reconnects back off from 100 ms to 5 s.
 */
export class ChangeFeed extends EventEmitter<{ change: [EdgeChange]; resync: []; connected: [] }> {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs = 100;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly connectionString: string) {
    super();
  }

  /** Resolves once listening for the first time (a first failure rejects: the edge cannot start blind). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'edgehub-edge-listen', keepAlive: true });
    client.on('notification', (message) => {
      if (message.channel !== EDGE_CHANNEL || !message.payload) return;
      try {
        this.emit('change', JSON.parse(message.payload) as EdgeChange);
      } catch (err) {
        logger.warn({ err: (err as Error).message }, 'edge: unreadable change notification');
      }
    });
    client.on('error', (err) => {
      logger.warn({ err: err.message }, 'edge: change feed connection failed; reconnecting');
      this.reconnectSoon(client);
    });
    client.on('end', () => this.reconnectSoon(client));
    await client.connect();
    await client.query(`LISTEN ${EDGE_CHANNEL}`);
    this.client = client;
    this.retryMs = 100;
    this.emit('connected');
    this.emit('resync');
  }

  private reconnectSoon(failed: pg.Client): void {
    if (this.stopped || this.client !== failed || this.timer) return;
    this.client = undefined;
    failed.removeAllListeners('end');
    failed.end().catch(() => undefined);
    const attempt = () => {
      this.timer = undefined;
      if (this.stopped) return;
      this.connect().catch((err) => {
        logger.warn({ err: (err as Error).message, retryMs: this.retryMs }, 'edge: change feed reconnect failed');
        this.retryMs = Math.min(this.retryMs * 2, 5000);
        this.timer = setTimeout(attempt, this.retryMs);
      });
    };
    this.timer = setTimeout(attempt, this.retryMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
