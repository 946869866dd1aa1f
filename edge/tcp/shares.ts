/**
 * TCP shares (`protocol: "tcp"`): every edge listens on each ACTIVE TCP share's port (shares.tcp_port, a port of
 * HUB_EDGE_TCP_PORTS the API gave it) and carries each connection to the share's target as bytes, directly under the
 * egress policy or through one of the environment's agents (a CONNECT stream), exactly as HTTP targets are reached.
 *
 * - Half-close both ways: each side may end its sending while it still reads (allowHalfOpen everywhere; the
 *   pump, agent/lib/pump.js, passes an end on as an end).
 * - Mutual TLS (`mutualTls: true`): the port speaks TLS with the share's host certificate (whatever name the client
 *   sends by SNI, or none) and admits only a client certificate of the share's hub (edge/access/mutualTls.ts);
 *   others are closed before a byte reaches the target. Revoking the certificate closes its open connections.
 * - Metered like HTTP: rx the bytes read from the client, tx the bytes written to it (edge/meter.ts, per connection).
 * - Bounded per share, apart from the hub's HTTP admission (edge/pipeline/limits.ts), so that idle connections to a TCP share
 *   never make the hub's HTTP shares answer 503: a connection with no byte either way for the share's
 *   `tcpIdleTimeout` (else HUB_EDGE_TCP_IDLE_TIMEOUT) is closed, and past HUB_EDGE_TCP_MAX_CONNECTIONS open
 *   connections of the share on this process (in their TLS handshake or carried) a new one is closed at once.
 * - A deleted share's port refuses at once (its listener closes) and its open connections close. A port another
 *   process holds (two edges on one host without a shared listener) is logged, and tried again at the next reload.
 */
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls, { type TLSSocket } from 'node:tls';
import type pg from 'pg';
import type { buildConnector } from 'undici';
import { authorityOf } from 'edgehub-agent/protocol';
import { pump } from 'edgehub-agent/pump';
import type { EgressPolicy } from '../../shared/egress.js';
import { egressConnector } from '../egressHttp.js';
import { durationMs } from '../../shared/durations.js';
import { logger } from '../../shared/logger.js';
import { settleWithin } from '../../shared/timeouts.js';
import type { MutualTlsChecker } from '../access/types.js';
import type { Meter } from '../meter.js';
import { compilePolicy, ipAdmits } from '../policy/compile.js';
import { observePolicyRefusal } from '../telemetry.js';
import type { StoredPolicy } from '../../shared/sharePolicy.js';
import { hostPattern } from '../state/routes.js';
import type { ShareRoute } from '../types.js';

/** How long a closed share's port waits for its connections to close before the next change is applied. */
const DROP_WAIT_MS = 5000;

interface TcpRow {
  z_id: string;
  hub_id: string;
  env_z_id: string;
  reach: string | null;
  target: string;
  mutual_tls: boolean;
  tcp_port: number;
  tcp_idle_timeout: string | null;
  policy: StoredPolicy | null;
  url_template: string;
}

const TCP_SQL = `
  SELECT s.z_id, s.hub_id, s.env_z_id, e.reach, s.target, s.mutual_tls, s.tcp_port, s.tcp_idle_timeout, s.policy, f.url_template
    FROM shares s JOIN frontends f ON f.id = s.frontend_id
    LEFT JOIN environments e ON e.hub_id = s.hub_id AND e.env_z_id = s.env_z_id
   WHERE s.status = 'ACTIVE' AND s.protocol = 'tcp'`;

interface Listener {
  route: ShareRoute;
  /** What the listener was made for: a change of any of these makes a new one. */
  signature: string;
  server: net.Server;
  connections: Set<Duplex>;
  /** Every accepted socket, in a TLS handshake or carried. */
  sockets: Set<net.Socket>;
  listening: boolean;
  /** A connection silent both ways this long is closed. */
  idleMs: number;
  /** When a connection over the limit was last logged (one line a minute per share, not one per connection). */
  refusedLoggedAt: number;
}

interface TcpSharesOptions {
  pool: pg.Pool;
  /** Interface to listen on (the edge's). */
  host?: string;
  policy: EgressPolicy;
  timeoutMs: number;
  meter: Meter;
  mutualTls?: MutualTlsChecker;
  /** The TLS context for a server name (edge/front/tls.ts). */
  contextFor(servername: string): tls.SecureContext | undefined;
  /** A connector through the environment's agents, or undefined when the edge connects itself (edge/agents). */
  connectorFor(route: ShareRoute): { key: string; connect: buildConnector.connector } | undefined;
  /** The edge's own ports: the TCP ports are added (a target on one of them would loop). */
  ownPorts: Set<number>;
  /** A connection silent both ways this long is closed, unless its share says otherwise (HUB_EDGE_TCP_IDLE_TIMEOUT). */
  idleMs: number;
  /** Open connections per share on this process; more are closed at once (HUB_EDGE_TCP_MAX_CONNECTIONS). */
  maxConnections: number;
}

export class TcpShares {
  private readonly listeners = new Map<string, Listener>();
  private readonly direct: buildConnector.connector;
  private work: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly o: TcpSharesOptions) {
    this.direct = egressConnector(o.policy, { timeoutMs: o.timeoutMs, ownPorts: () => o.ownPorts, allowHalfOpen: true });
  }

  /** `host:port` of the environment's TCP share targets (what its agents may connect to). */
  targetsOf(hubId: string, envZId: string): string[] {
    const out: string[] = [];
    for (const l of this.listeners.values())
      if (l.route.hubId === hubId && l.route.envZId === envZId) out.push(authorityOf(l.route.target.hostname, l.route.target.port));
    return out;
  }

  /** The environment's TCP shares with their targets (host:port). */
  sharesOf(hubId: string, envZId: string): { zId: string; authority: string }[] {
    const out: { zId: string; authority: string }[] = [];
    for (const l of this.listeners.values())
      if (l.route.hubId === hubId && l.route.envZId === envZId)
        out.push({ zId: l.route.zId, authority: authorityOf(l.route.target.hostname, l.route.target.port) });
    return out;
  }

  /** The ports listened on now (tests). */
  get ports(): number[] {
    return [...this.listeners.values()].filter((l) => l.listening).map((l) => Number(l.signature.split(' ')[0]));
  }

  reloadAll(): Promise<void> {
    return this.enqueue(async () => {
      const { rows } = await this.o.pool.query<TcpRow>(TCP_SQL);
      const seen = new Set(rows.map((r) => r.z_id));
      for (const zId of [...this.listeners.keys()]) if (!seen.has(zId)) await this.drop(zId);
      for (const row of rows) await this.place(row);
    });
  }

  reloadShare(zId: string): Promise<void> {
    return this.enqueue(async () => {
      const { rows } = await this.o.pool.query<TcpRow>(`${TCP_SQL} AND s.z_id = $1`, [zId]);
      if (!rows.length) return this.drop(zId);
      await this.place(rows[0]);
    });
  }

  /** Closes every TCP port and its connections. */
  close(): Promise<void> {
    this.closed = true;
    return this.enqueue(async () => {
      for (const zId of [...this.listeners.keys()]) await this.drop(zId);
    });
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.work.then(task);
    this.work = run.catch((err) => logger.error({ err: (err as Error).message }, 'edge: TCP shares not loaded'));
    return this.work;
  }

  private async place(row: TcpRow): Promise<void> {
    if (this.closed) return;
    const signature = `${row.tcp_port} ${row.target} ${row.mutual_tls} ${row.env_z_id} ${row.reach}`;
    const idleMs = (row.tcp_idle_timeout && durationMs(row.tcp_idle_timeout)) || this.o.idleMs;
    const current = this.listeners.get(row.z_id);
    const policy = compilePolicy(row.policy);
    if (current?.signature === signature && current.listening) {
      // a new policy judges the connections open now too: those its IP rules no longer admit are closed
      current.route.policy = policy;
      if (policy) for (const c of current.sockets) if (!ipAdmits(policy, c.remoteAddress ?? '')) c.resetAndDestroy();
      // a new idle timeout applies to the connections open now too (their timers restart)
      if (current.idleMs !== idleMs) {
        current.idleMs = idleMs;
        for (const c of current.connections) (c as net.Socket).setTimeout(idleMs);
      }
      return;
    }
    if (current) await this.drop(row.z_id);
    const pattern = hostPattern(row.url_template);
    const host = pattern ? pattern.replace('{token}', row.z_id) : row.z_id;
    const route: ShareRoute = {
      zId: row.z_id,
      hubId: row.hub_id,
      envZId: row.env_z_id,
      // fail closed, as HTTP routes: anything but an explicit 'edge' is reached only through the environment's agents
      reach: row.reach === 'edge' ? 'edge' : 'agent',
      frontendId: 'tcp',
      target: new URL(row.target),
      mutualTls: row.mutual_tls,
      auth: null,
      emailDomains: null,
      checkIntervalMs: 0,
      policy,
    };
    const listener: Listener = {
      route,
      signature,
      connections: new Set(),
      sockets: new Set(),
      listening: false,
      server: undefined as never,
      idleMs,
      refusedLoggedAt: 0,
    };
    listener.server = net.createServer({ allowHalfOpen: true }, (socket) => this.accept(listener, socket, host));
    this.listeners.set(row.z_id, listener);
    await new Promise<void>((resolve) => {
      listener.server.once('error', (err) => {
        logger.warn({ zId: row.z_id, port: row.tcp_port, err: err.message }, 'edge: TCP share port not listened on');
        this.listeners.delete(row.z_id);
        resolve();
      });
      listener.server.listen({ port: row.tcp_port, host: this.o.host }, () => {
        listener.listening = true;
        this.o.ownPorts.add(row.tcp_port);
        resolve();
      });
    });
  }

  private async drop(zId: string): Promise<void> {
    const listener = this.listeners.get(zId);
    if (!listener) return;
    this.listeners.delete(zId);
    this.o.ownPorts.delete(Number(listener.signature.split(' ')[0]));
    // the port refuses from now on, and what was open through it closes
    const closed = new Promise<void>((resolve) => listener.server.close(() => resolve()));
    // a reset, not a polite end: the client learns at once that nothing more comes or goes (reset first: a socket
    // destroyed first would only have sent a FIN, which a half-open client takes for the end of the target's data)
    for (const s of listener.sockets) s.resetAndDestroy();
    for (const c of listener.connections) c.destroy();
    // the port is closed at once; the close callback waits for the last connection. Every change of every TCP share
    // goes through one queue, so a connection that somehow outlives its reset must not hold up the next change
    await settleWithin(closed, DROP_WAIT_MS, () => new Error('connections still open')).catch((err: Error) =>
      logger.warn(
        { zId, port: Number(listener.signature.split(' ')[0]), open: listener.sockets.size, err: err.message },
        'edge: TCP share closed, a connection still closing',
      ),
    );
  }

  /** A new connection to the share's port: within the share's bound, carried (after TLS for a mutual-TLS share). */
  private accept(listener: Listener, socket: net.Socket, host: string): void {
    socket.on('error', () => undefined);
    // the share's own bound, counted before any TLS handshake: past it the connection is closed unread
    if (listener.sockets.size >= this.o.maxConnections) {
      socket.destroy();
      const now = Date.now();
      if (now - listener.refusedLoggedAt >= 60_000) {
        listener.refusedLoggedAt = now;
        logger.warn(
          { zId: listener.route.zId, max: this.o.maxConnections },
          'edge: TCP share at its connection limit (HUB_EDGE_TCP_MAX_CONNECTIONS): new connections closed',
        );
      }
      return;
    }
    // the share policy's IP rules, on the connection's address: a refused connection is closed unread
    const policy = listener.route.policy;
    if (policy && !ipAdmits(policy, socket.remoteAddress ?? '')) {
      observePolicyRefusal(listener.route.zId, 'ip');
      return void socket.resetAndDestroy();
    }
    listener.sockets.add(socket);
    socket.once('close', () => listener.sockets.delete(socket));
    if (!listener.route.mutualTls) return this.carry(listener, socket);
    // TLS with the share host's certificate, whatever name the client sends, or none (a TLS server's SNI callback is
    // not asked when the client names none: the socket is given the share's context from the start)
    const secureContext = this.o.contextFor(host);
    if (!secureContext) {
      logger.warn({ zId: listener.route.zId, host }, 'edge: TCP connection refused: no certificate for the share host');
      return void socket.destroy();
    }
    const secure = new tls.TLSSocket(socket, { isServer: true, secureContext, requestCert: true, rejectUnauthorized: false });
    secure.on('error', () => secure.destroy());
    // a handshake that does not finish is a silent connection too
    secure.setTimeout(listener.idleMs, () => secure.destroy());
    secure.once('secure', () => this.admitted(listener, secure));
  }

  /** A TLS client of a mutual-TLS share: carried only with a client certificate of the share's hub. */
  private admitted(listener: Listener, socket: TLSSocket): void {
    socket.on('error', () => undefined);
    const decision = this.o.mutualTls?.check(listener.route.hubId, socket) ?? { ok: false as const, message: 'mutual TLS is not available on this edge' };
    if (!decision.ok) {
      logger.info({ zId: listener.route.zId, reason: decision.message }, 'edge: TCP connection refused (mutual TLS)');
      return void socket.destroy();
    }
    this.carry(listener, socket);
  }

  /** Whether the connections a certificate admitted may stay (called on access changes). */
  sweep(): void {
    for (const listener of this.listeners.values()) {
      if (!listener.route.mutualTls) continue;
      for (const c of listener.connections) {
        const decision = this.o.mutualTls?.check(listener.route.hubId, c as TLSSocket);
        if (!decision?.ok) c.destroy();
      }
    }
  }

  private carry(listener: Listener, client: net.Socket): void {
    const { route } = listener;
    client.on('error', () => undefined);
    listener.connections.add(client);
    client.pause();
    // no byte either way for this long (the socket's timer restarts on every read and write): closed, both sides
    client.setTimeout(listener.idleMs, () => client.destroy());
    let upstream: Duplex | undefined;
    client.once('close', () => {
      listener.connections.delete(client);
      upstream?.destroy();
    });
    this.o.meter.track(client, route);
    const via = this.o.connectorFor(route);
    const connect = via?.connect ?? this.direct;
    connect(
      { hostname: route.target.hostname, host: route.target.host, protocol: 'http:', port: route.target.port, servername: undefined } as buildConnector.Options,
      (err, socket) => {
        if (err || !socket) {
          logger.info({ zId: route.zId, err: err?.message }, 'edge: TCP share target not reached');
          return void client.destroy();
        }
        upstream = socket as unknown as Duplex;
        if (client.destroyed) return void upstream.destroy();
        upstream.on('error', () => client.destroy());
        upstream.once('close', () => {
          // the target went away: what it sent is flushed, then the client's connection closes
          if (!client.writableEnded) client.end();
          client.destroySoon();
        });
        pump(client, upstream);
        pump(upstream, client);
      },
    );
  }
}
