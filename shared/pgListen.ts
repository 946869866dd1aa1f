import pg from 'pg';
import { backoffMs } from './backoff.js';
import { logThrottle } from './logThrottle.js';
import { applicationName, databaseUrl } from './db.js';
import { config } from './config.js';
import { logger } from './logger.js';
import { settleWithin } from './timeouts.js';

const listenFailures = logThrottle(30_000);

export interface Listener {
  /** True while the LISTEN connection is up: only then can a cache trust that it hears of every change. */
  readonly live: boolean;
  /** Resolves once the first LISTEN succeeded (or rejects after `timeoutMs`). */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface ListenOptions {
  /** Defaults to the process's DATABASE_URL. */
  connectionString?: string;
  /** The connection's application_name; default `<this process's name>-listen`. */
  applicationName?: string;
  /** The longest wait between two reconnection attempts (the first is 100 ms); default 2 s. */
  maxBackoffMs?: number;
  /** How often the connection is checked (default HUB_DB_LISTEN_PING_MS); silent for half of it, it is dropped. */
  pingMs?: number;
}

/**
 * A dedicated PostgreSQL connection that LISTENs on `channel` and hands every payload to `onMessage`. When the
 * connection drops it reconnects with exponential backoff; `onReset` runs whenever notifications may have been missed:
 * with `lost` when the connection went (a cache built on it empties itself and stays empty while `live` is false),
 * and with `listening` once it listens anew (whatever was read before that instant may have missed a change).
 *
 * A connection can also go silent without closing (a peer that hangs, a network path that drops packets without a
 * reset): TCP would notice only after hours, and meanwhile no revocation would be heard. So the connection is asked a
 * `SELECT 1` every `pingMs`; no answer within half of that, and it is treated as lost.
 */
export function listen(
  channel: string,
  onMessage: (payload: string) => void,
  onReset: (why: 'lost' | 'listening') => void,
  options: ListenOptions = {},
): Listener {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`bad channel name ${channel}`);
  let client: pg.Client | undefined;
  let live = false;
  let closed = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;
  let pinger: NodeJS.Timeout | undefined;
  const pingMs = options.pingMs ?? config().security.listenPingMs;
  let resolveReady!: () => void;
  const firstReady = new Promise<void>((resolve) => (resolveReady = resolve));

  const lost = (c: pg.Client) => {
    if (client !== c) return;
    client = undefined;
    live = false;
    clearInterval(pinger);
    pinger = undefined;
    onReset('lost');
    c.end().catch(() => undefined);
    if (!closed) timer = setTimeout(connect, backoffMs(++attempt, { minMs: 100, maxMs: options.maxBackoffMs ?? 2000 }));
  };

  async function connect() {
    timer = undefined;
    if (closed) return;
    const c = new pg.Client({ connectionString: options.connectionString ?? databaseUrl(), application_name: options.applicationName ?? `${applicationName()}-listen`, keepAlive: true });
    client = c;
    c.on('error', (err) => {
      logger.warn({ err: err.message, channel }, 'change notifications lost; reconnecting');
      lost(c);
    });
    c.on('end', () => lost(c));
    c.on('notification', (n) => {
      if (n.channel === channel && n.payload !== undefined) onMessage(n.payload);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
      if (client !== c || closed) return;
      attempt = 0;
      onReset('listening');
      live = true;
      resolveReady();
      pinger = setInterval(() => ping(c), pingMs);
      pinger.unref();
    } catch (err) {
      const message = (err as Error).message;
      // retried every 2 s at most while PostgreSQL is away: said once each 30 s
      listenFailures(`${channel} ${message}`, (repeated) => logger.warn({ err: message, channel, repeated }, 'could not listen for change notifications; retrying'));
      lost(c);
    }
  }

  let pinging = false;
  /** `SELECT 1` on the LISTEN connection; no answer within half the interval is a connection lost. */
  async function ping(c: pg.Client) {
    if (pinging || client !== c) return;
    pinging = true;
    try {
      await settleWithin(c.query('SELECT 1'), pingMs / 2, () => new Error(`no answer within ${pingMs / 2} ms`));
    } catch (err) {
      if (client === c) {
        const message = (err as Error).message;
        listenFailures(`${channel} silent ${message}`, (repeated) => logger.warn({ err: message, channel, repeated }, 'change notifications: the connection stopped answering; reconnecting'));
        lost(c);
      }
    } finally {
      pinging = false;
    }
  }

  void connect();
  return {
    get live() {
      return live;
    },
    ready(timeoutMs = 10_000) {
      return settleWithin(firstReady, timeoutMs, () => new Error(`not listening on ${channel} within ${timeoutMs} ms`));
    },
    async close() {
      closed = true;
      live = false;
      if (timer) clearTimeout(timer);
      clearInterval(pinger);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
