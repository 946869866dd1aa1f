/**
 * The service's own endpoints: where its dependencies (PostgreSQL, Redis) and its listeners (the API, the metrics
 * ports, the edge's HTTP, TLS and TCP share ports, the validation zone's DNS server) are. No connection a tenant
 * causes may reach one of them (the egress policy, shared/egress.ts, asks `denies` for every address it connects to).
 *
 * An endpoint is a port range on an address set. A listener of the service, and a dependency on a loopback,
 * unspecified or interface address of this host (or a name resolving to one), is denied on every address of this
 * host: whatever the spelling (127.1, 0x7f000001, ::ffff:127.0.0.1, 0.0.0.0, a name resolving to loopback), the
 * address actually connected to is one of them. A dependency on another host is denied at the addresses its name
 * resolves to (resolved at start and again every minute), at its port only.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import os from 'node:os';
import type { Config } from './config.js';

interface OwnEndpoint {
  /** What it is (PostgreSQL, Redis, API, ...): for reading; a denial names no more than "the service's own endpoint". */
  what: string;
  /** undefined: this host (every one of its addresses); else a dependency's host as configured (a name or an IP). */
  host?: string;
  from: number;
  to: number;
}

const REFRESH_MS = 60_000;
const DENIED = "the service's own endpoint";

const portOf = (url: URL, fallback: number) => (url.port ? Number(url.port) : fallback);
const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** A dependency's endpoint from its URL (undefined when it is not a TCP address, e.g. a unix socket). */
function dependency(what: string, text: string | undefined, defaultPort: number): OwnEndpoint | undefined {
  if (!text) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const host = bare(url.hostname);
  if (!host) return undefined;
  const port = portOf(url, defaultPort);
  return { what, host, from: port, to: port };
}

/** The service's own endpoints as a configuration names them. */
export function ownEndpointsOf(cfg: Config): OwnEndpoint[] {
  const list: (OwnEndpoint | undefined)[] = [
    dependency('PostgreSQL', cfg.databaseUrl, 5432),
    dependency('Redis', cfg.redisUrl, 6379),
    // with Sentinel, the sentinels (the master and replicas they name move: an operator denies their hosts in HUB_EGRESS_DENY)
    ...(cfg.redisSentinel?.sentinels ?? []).map((s): OwnEndpoint => ({ what: 'Redis Sentinel', host: s.host, from: s.port, to: s.port })),
    { what: 'API', from: cfg.port, to: cfg.port },
    // the DNS server of the validation zone (DNS over TCP)
    dependency('validation DNS', cfg.validationDnsListen && `dns://${cfg.validationDnsListen}`, 53),
  ];
  const edge = cfg.edge;
  if (edge.httpPort) list.push({ what: 'edge', from: edge.httpPort, to: edge.httpPort });
  if (edge.httpsPort) list.push({ what: 'edge', from: edge.httpsPort, to: edge.httpsPort });
  list.push({ what: 'edge (TCP shares)', from: edge.tcpPorts.from, to: edge.tcpPorts.to });
  const metrics = cfg.metricsListener;
  // an edge that forks its workers gives them the ports after its own
  if (metrics?.port) list.push({ what: 'metrics', from: metrics.port, to: Math.min(65535, metrics.port + edge.workers - 1) });
  // npm start gives each of its children a metrics port of this range
  if (cfg.metricsPorts) list.push({ what: 'metrics', ...cfg.metricsPorts });
  return list.filter((e): e is OwnEndpoint => e !== undefined && e.from > 0);
}

interface Resolved {
  endpoint: OwnEndpoint;
  /** Every address of this host. */
  local: boolean;
  /** Addresses of another host (normalised). */
  addresses: Set<string>;
}

const normal = (address: string): string | undefined => {
  try {
    return ipaddr.process(address).toString();
  } catch {
    return undefined;
  }
};

/**
 * Whether `address` is one of this host's own: loopback, unspecified (0.0.0.0/8, `::`, which connect to the host
 * itself) or an address of one of its interfaces.
 */
export function isOwnAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  const range = parsed.range();
  if (range === 'loopback' || range === 'unspecified') return true;
  const text = parsed.toString();
  for (const list of Object.values(os.networkInterfaces())) {
    for (const info of list ?? []) {
      try {
        if (ipaddr.process(info.address).toString() === text) return true;
      } catch {
        // an interface address ipaddr cannot read (scoped IPv6): not ours to compare
      }
    }
  }
  return false;
}

export class OwnEndpoints {
  private readonly resolved: Resolved[];
  private readonly named: Resolved[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Settles once the names among the endpoints have been resolved once. */
  readonly ready: Promise<void>;

  constructor(endpoints: OwnEndpoint[]) {
    this.resolved = endpoints.map((endpoint) => {
      const entry: Resolved = { endpoint, local: endpoint.host === undefined, addresses: new Set() };
      const host = endpoint.host;
      if (host === undefined) return entry;
      if (net.isIP(host)) {
        if (isOwnAddress(host)) entry.local = true;
        else entry.addresses.add(normal(host)!);
      } else if (host.toLowerCase() === 'localhost' || host.toLowerCase().endsWith('.localhost')) {
        entry.local = true;
      } else {
        this.named.push(entry);
      }
      return entry;
    });
    this.ready = this.named.length ? this.resolve() : Promise.resolve();
    if (this.named.length) {
      this.timer = setInterval(() => void this.resolve(), REFRESH_MS);
      this.timer.unref();
    }
  }

  /** Resolves the named endpoints again; a name that does not resolve keeps the addresses it had. */
  private async resolve(): Promise<void> {
    await Promise.all(
      this.named.map(async (entry) => {
        try {
          const found = await dns.promises.lookup(entry.endpoint.host!, { all: true });
          const addresses = new Set<string>();
          let local = false;
          for (const { address } of found) {
            if (isOwnAddress(address)) local = true;
            const n = normal(address);
            if (n) addresses.add(n);
          }
          entry.addresses = addresses;
          entry.local = local;
        } catch {
          // unresolvable now: what was known stays denied
        }
      }),
    );
  }

  /** The rule that denies connecting to `address` (an IP) at `port`, or undefined. */
  denies(address: string, port: number): string | undefined {
    let own: boolean | undefined;
    let text: string | undefined;
    for (const { endpoint, local, addresses } of this.resolved) {
      if (port < endpoint.from || port > endpoint.to) continue;
      own ??= isOwnAddress(address);
      // which of them is not said: a tenant learns no more than that the address is not theirs to reach
      if (local && own) return DENIED;
      text ??= normal(address);
      if (text && addresses.has(text)) return DENIED;
    }
    return undefined;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
