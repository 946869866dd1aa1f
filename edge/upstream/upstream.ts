/**
 * Connections to share targets: one undici Pool per (hub, target origin, path to it), so a target connection is
 * only ever reused for the hub it was opened for, and whatever one hub's target does to its connections (answers
 * out of step, trailers, leftovers) cannot reach another hub's users. undici is the HTTP/1.1 codec: it frames
 * requests from the body actually sent, parses answers with llhttp, resets its parser state between exchanges, and
 * retires a connection on bytes nobody asked for.
 *
 * How a connection is made is the pool's connector: directly (under the egress policy, edge/egressHttp.ts) or,
 * for an environment served by agents, through one of its agents (given by `connectorFor`).
 */
import { isIP } from 'node:net';
import { Pool, type buildConnector, type Dispatcher } from 'undici';
import type { EgressPolicy } from '../../shared/egress.js';
import { egressConnector } from '../egressHttp.js';
import type { ShareRoute, Sticky } from '../types.js';

interface UpstreamOptions {
  policy: EgressPolicy;
  /** Connect, and the answer head after the last request byte, must each take less than this. */
  timeoutMs: number;
  /** Longest silence between two pieces of an answer's body (HUB_EDGE_UPSTREAM_READ_TIMEOUT_MS). */
  readTimeoutMs: number;
  /** Idle keep-alive connections are closed after this long (below common server defaults of 5 s). */
  idleMs?: number;
  /** Connections per (hub, target) at most; more requests wait for one. */
  connectionsPerTarget?: number;
  /** The edge's own listening ports: a target on this host at one of them is refused (a loop). */
  ownPorts?: () => ReadonlySet<number>;
  /** A connector for routes that do not connect directly (agent-backed environments), with the key it is cached by. */
  connectorFor?: (route: ShareRoute, sticky?: Sticky) => { key: string; connect: buildConnector.connector } | undefined;
}

/**
 * The TLS server name an https target is asked for and its certificate checked against: the target's own host name.
 * undici would take it from the request's Host header, which the edge passes on unchanged (the share's public name,
 * not the target's). An IP literal is sent no name (RFC 6066) and checked as an address.
 */
function targetServerName(target: URL): string | undefined {
  const name = target.hostname;
  return name.startsWith('[') || isIP(name) ? undefined : name;
}

interface Entry {
  pool: Pool;
  hubId: string;
  /** When the pool last had nothing open or running (0 while in use). */
  idleSince: number;
}

const POOL_IDLE_MS = 30_000;

export class UpstreamPools {
  private readonly pools = new Map<string, Entry>();
  private readonly direct: buildConnector.connector;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: UpstreamOptions) {
    this.direct = egressConnector(options.policy, { timeoutMs: options.timeoutMs, ownPorts: options.ownPorts });
    this.timer = setInterval(() => this.sweep(), 10_000);
    this.timer.unref();
  }

  /** The pool that carries `route`'s requests: its hub's own, for its target origin (and agent, `sticky` its claim to one). */
  dispatcher(route: ShareRoute, sticky?: Sticky): Dispatcher {
    const via = this.options.connectorFor?.(route, sticky);
    const key = `${route.hubId} ${via ? via.key : 'direct'} ${route.target.origin}`;
    let entry = this.pools.get(key);
    if (!entry) {
      const connect = via?.connect ?? this.direct;
      const servername = targetServerName(route.target);
      const pool = new Pool(route.target.origin, {
        // every connection of the pool is to this target: its name, whatever Host a request carries
        connect: route.target.protocol === 'https:' ? (opts, callback) => connect({ ...opts, servername }, callback) : connect,
        connections: this.options.connectionsPerTarget ?? 256,
        pipelining: 1,
        keepAliveTimeout: this.options.idleMs ?? 4_000,
        keepAliveMaxTimeout: this.options.idleMs ?? 4_000,
        keepAliveTimeoutThreshold: 1_000,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.readTimeoutMs,
        connectTimeout: this.options.timeoutMs,
        // answers of any size; headers as large as node's server takes from clients
        maxHeaderSize: 16 * 1024,
        strictContentLength: true,
      });
      entry = { pool, hubId: route.hubId, idleSince: 0 };
      this.pools.set(key, entry);
    }
    entry.idleSince = 0;
    return entry.pool;
  }

  /** Pools of a hub (tests and telemetry). */
  poolsOf(hubId: string): number {
    let n = 0;
    for (const entry of this.pools.values()) if (entry.hubId === hubId) n++;
    return n;
  }

  /** Closes pools that have had no connection for a while (targets change; hubs go). */
  private sweep() {
    const now = Date.now();
    for (const [key, entry] of this.pools) {
      const { connected, pending, running } = entry.pool.stats;
      if (connected || pending || running) {
        entry.idleSince = 0;
        continue;
      }
      if (!entry.idleSince) entry.idleSince = now;
      else if (now - entry.idleSince >= POOL_IDLE_MS) {
        this.pools.delete(key);
        void entry.pool.close().catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((e) => e.pool.destroy().catch(() => undefined)));
  }
}
