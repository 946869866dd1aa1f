import pg from 'pg';
import { backoffMs } from './backoff.js';
import { logThrottle } from './logThrottle.js';
import { applicationName, databaseUrl } from './db.js';
import { config } from './config.js';
import { logger } from './logger.js';
import { settleWithin } from './timeouts.js';

const listenFailures = logThrottle(30_000);

export interface Listener {
  /** True while its channel is listened on: only then can a cache trust that it hears of every change. */
  readonly live: boolean;
  /** Resolves once the first LISTEN succeeded (or rejects after `timeoutMs`). */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface ListenOptions {
  /** Defaults to the process's DATABASE_URL. */
  connectionString?: string;
  /** The connection's application_name; default `<this process's name>-listen`. */
  applicationName?: string;
  /** The longest wait between two reconnection attempts (the first is 100 ms); default 2 s. */
  maxBackoffMs?: number;
  /** How often the connection is checked (default HUB_DB_LISTEN_PING_MS); silent for half of it, it is dropped. */
  pingMs?: number;
}

interface Subscriber {
  channel: string;
  onMessage: (payload: string) => void;
  onReset: (why: 'lost' | 'listening') => void;
  /** Its channel is listened on, on the connection as it is now. */
  listening: boolean;
  resolveReady: () => void;
  firstReady: Promise<void>;
}

/**
 * One LISTEN connection, shared by every listener of a process that names the same database and application name:
 * a web process listens for key revocations, CA changes and share deletions on one connection, not one per cache.
 * It LISTENs on the channels its listeners ask for (UNLISTEN once none asks), reconnects with backoff when it drops,
 * and tells every listener of a loss and of listening anew. Dropped once its last listener closes.
 */
class SharedConnection {
  private client: pg.Client | undefined;
  private live = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private pinger: NodeJS.Timeout | undefined;
  private pinging = false;
  private readonly listened = new Set<string>();
  readonly subscribers = new Set<Subscriber>();

  constructor(
    private readonly connectionString: string,
    private readonly name: string,
    private readonly maxBackoffMs: number,
    private readonly pingMs: number,
    private readonly onEmpty: () => void,
  ) {}

  isLive(sub: Subscriber): boolean {
    return this.live && sub.listening;
  }

  add(sub: Subscriber): void {
    this.subscribers.add(sub);
    const c = this.client;
    if (!c && !this.timer) return void this.connect();
    if (!c || !this.live) return; // the connection being made, or the next one, listens on its channel
    if (this.listened.has(sub.channel)) return void queueMicrotask(() => this.listening(c, sub));
    this.listened.add(sub.channel);
    c.query(`LISTEN ${sub.channel}`).then(
      () => this.listening(c, sub),
      () => this.lost(c),
    );
  }

  async remove(sub: Subscriber): Promise<void> {
    if (!this.subscribers.delete(sub)) return;
    if (this.subscribers.size === 0) {
      this.onEmpty();
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      clearInterval(this.pinger);
      this.live = false;
      const c = this.client;
      this.client = undefined;
      await c?.end().catch(() => undefined);
      return;
    }
    const c = this.client;
    if (c && this.live && this.listened.has(sub.channel) && ![...this.subscribers].some((s) => s.channel === sub.channel)) {
      this.listened.delete(sub.channel);
      await c.query(`UNLISTEN ${sub.channel}`).catch(() => undefined);
    }
  }

  private listening(c: pg.Client, sub: Subscriber): void {
    if (this.client !== c || !this.live || !this.subscribers.has(sub) || sub.listening) return;
    sub.listening = true;
    sub.onReset('listening');
    sub.resolveReady();
  }

  private lost(c: pg.Client): void {
    if (this.client !== c) return;
    this.client = undefined;
    this.live = false;
    this.listened.clear();
    clearInterval(this.pinger);
    this.pinger = undefined;
    for (const sub of this.subscribers) {
      sub.listening = false;
      sub.onReset('lost');
    }
    c.end().catch(() => undefined);
    if (this.subscribers.size > 0) this.timer = setTimeout(() => this.connect(), backoffMs(++this.attempt, { minMs: 100, maxMs: this.maxBackoffMs }));
  }

  private async connect(): Promise<void> {
    this.timer = undefined;
    if (this.subscribers.size === 0) return;
    const c = new pg.Client({ connectionString: this.connectionString, application_name: this.name, keepAlive: true });
    this.client = c;
    const channels = () => [...new Set([...this.subscribers].map((s) => s.channel))].join(' ');
    c.on('error', (err) => {
      logger.warn({ err: err.message, channels: channels() }, 'change notifications lost; reconnecting');
      this.lost(c);
    });
    c.on('end', () => this.lost(c));
    c.on('notification', (n) => {
      if (n.payload === undefined) return;
      for (const sub of this.subscribers) if (sub.channel === n.channel) sub.onMessage(n.payload);
    });
    try {
      await c.connect();
      // every channel asked for, those asked for while this runs too
      for (let missing = this.missing(); missing.length > 0 && this.client === c; missing = this.missing()) {
        for (const ch of missing) this.listened.add(ch);
        await c.query(missing.map((ch) => `LISTEN ${ch}`).join('; '));
      }
      if (this.client !== c) return;
      this.attempt = 0;
      this.live = true;
      for (const sub of this.subscribers) this.listening(c, sub);
      this.pinger = setInterval(() => void this.ping(c), this.pingMs);
      this.pinger.unref();
    } catch (err) {
      const message = (err as Error).message;
      // retried every 2 s at most while PostgreSQL is away: said once each 30 s
      listenFailures(`${this.name} ${message}`, (repeated) =>
        logger.warn({ err: message, channels: channels(), repeated }, 'could not listen for change notifications; retrying'),
      );
      this.lost(c);
    }
  }

  private missing(): string[] {
    return [...new Set([...this.subscribers].map((s) => s.channel))].filter((ch) => !this.listened.has(ch));
  }

  /** `SELECT 1` on the LISTEN connection; no answer within half the interval is a connection lost. */
  private async ping(c: pg.Client): Promise<void> {
    if (this.pinging || this.client !== c) return;
    this.pinging = true;
    try {
      await settleWithin(c.query('SELECT 1'), this.pingMs / 2, () => new Error(`no answer within ${this.pingMs / 2} ms`));
    } catch (err) {
      if (this.client === c) {
        const message = (err as Error).message;
        listenFailures(`${this.name} silent ${message}`, (repeated) =>
          logger.warn({ err: message, repeated }, 'change notifications: the connection stopped answering; reconnecting'),
        );
        this.lost(c);
      }
    } finally {
      this.pinging = false;
    }
  }
}

const connections = new Map<string, SharedConnection>();

/**
 * Hands every payload notified on `channel` to `onMessage`, over the process's LISTEN connection to that database
 * (one for all its channels, see SharedConnection). `onReset` runs whenever notifications may have been missed: with
 * `lost` when the connection went (a cache built on it empties itself and stays empty while `live` is false), and
 * with `listening` once it listens anew (whatever was read before that instant may have missed a change).
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
  const connectionString = options.connectionString ?? databaseUrl();
  const name = options.applicationName ?? `${applicationName()}-listen`;
  const key = `${name}\n${connectionString}`;
  let shared = connections.get(key);
  if (!shared) {
    const created = new SharedConnection(connectionString, name, options.maxBackoffMs ?? 2000, options.pingMs ?? config().security.listenPingMs, () => {
      if (connections.get(key) === created) connections.delete(key);
    });
    connections.set(key, created);
    shared = created;
  }
  const connection = shared;
  let resolveReady!: () => void;
  const firstReady = new Promise<void>((resolve) => (resolveReady = resolve));
  const sub: Subscriber = { channel, onMessage, onReset, listening: false, resolveReady, firstReady };
  connection.add(sub);
  return {
    get live() {
      return connection.isLive(sub);
    },
    ready(timeoutMs = 10_000) {
      return settleWithin(sub.firstReady, timeoutMs, () => new Error(`not listening on ${channel} within ${timeoutMs} ms`));
    },
    close() {
      sub.listening = false;
      return connection.remove(sub);
    },
  };
}
