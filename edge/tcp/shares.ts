/**
 * TCP shares (`protocol: "tcp"`): every edge listens on each ACTIVE TCP share's port (shares.tcp_port, a port of
 * HUB_EDGE_TCP_PORTS the API gave it) and hands each connection to the admission pipeline (edge/pipeline/steps.ts
 * `connectionSteps`: the share's connection bound, its policy's IP rules, mutual TLS), which carries its bytes to the
 * share's target (edge/upstream/tcp.ts), directly or through one of the environment's agents.
 *
 * - Mutual TLS (`mutualTls: true`): the port speaks TLS with the share's host certificate and admits only a client
 *   certificate of the share's hub (edge/pipeline/tcpMutualTls.ts). Revoking the certificate closes its open
 *   connections (sweep).
 * - A connection with no byte either way for the share's `tcpIdleTimeout` (else HUB_EDGE_TCP_IDLE_TIMEOUT) is
 *   closed; a change of the timeout applies to the open connections too, and a change of the IP rules closes those
 *   they no longer admit.
 * - A deleted share's port refuses at once (its listener closes) and its open connections close. A port another
 *   process holds (two edges on one host without a shared listener) is logged, and tried again at the next reload.
 */
import net from 'node:net';
import type { TLSSocket } from 'node:tls';
import type pg from 'pg';
import { authorityOf } from 'edgehub-agent/protocol';
import { durationMs } from '../../shared/durations.js';
import { logger } from '../../shared/logger.js';
import { settleWithin } from '../../shared/timeouts.js';
import type { MutualTlsChecker } from '../access/types.js';
import type { TcpPort } from '../pipeline/tcpExchange.js';
import { compilePolicy, ipAdmits } from '../policy/compile.js';
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

/** A port listened on for a share: what the pipeline sees of it (TcpPort), and its server. */
interface Listener extends TcpPort {
  /** What the listener was made for: a change of any of these makes a new one. */
  signature: string;
  server: net.Server;
  listening: boolean;
}

interface TcpSharesOptions {
  pool: pg.Pool;
  /** Interface to listen on (the edge's). */
  host?: string;
  /** Mutual TLS: the connections a client certificate admitted are checked again on access changes (sweep). */
  mutualTls?: MutualTlsChecker;
  /** The edge's own ports: the TCP ports are added (a target on one of them would loop). */
  ownPorts: Set<number>;
  /** A connection silent both ways this long is closed, unless its share says otherwise (HUB_EDGE_TCP_IDLE_TIMEOUT). */
  idleMs: number;
  /** Takes each accepted connection: the admission pipeline's entry for TCP (edge/pipeline/dispatch.ts). */
  accept(port: TcpPort, socket: net.Socket): void;
}

export class TcpShares {
  private readonly listeners = new Map<string, Listener>();
  private work: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly o: TcpSharesOptions) {}

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
        for (const c of current.connections) c.setTimeout(idleMs);
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
      host,
      signature,
      connections: new Set(),
      sockets: new Set(),
      listening: false,
      server: undefined as never,
      idleMs,
    };
    listener.server = net.createServer({ allowHalfOpen: true }, (socket) => this.o.accept(listener, socket));
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
}
