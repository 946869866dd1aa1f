import dns, { type LookupAddress } from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { type Config, config } from './config.js';
import { isOwnAddress, OwnEndpoints, ownEndpointsOf } from './ownEndpoints.js';

export { isOwnAddress };

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Why a connection to `host` (at `address`) is refused: the address and the rule. */
export const egressDenial = (host: string, address: string, rule: string) =>
  `target ${host}${host === address ? '' : ` (${address})`} is denied by the egress policy (${rule})`;

/** The error a refused connection fails with (code EGRESS_DENIED), naming the address and the rule. */
export class EgressDeniedError extends Error {
  readonly code = 'EGRESS_DENIED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly rule: string,
  ) {
    super(egressDenial(host, address, rule));
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
/** node:net's `lookup` option. */
type LookupFn = (hostname: string, options: dns.LookupOptions | number | LookupCallback, callback?: LookupCallback) => void;

/**
 * What share targets, health-check targets and every other connection a tenant causes may never reach: the CIDRs of
 * HUB_EGRESS_DENY, and the service's own endpoints (its PostgreSQL, Redis, API, metrics and edge ports; an address
 * and a port, shared/ownEndpoints.ts). The check is made on the address actually connected to: `lookupFor(port)`
 * resolves, checks every address, and hands the connection only addresses that passed, so a name that resolves
 * differently between a check and the connect (DNS rebinding) cannot slip by. IP literals skip lookup in node:net,
 * so callers check them with `checkTarget` first.
 */
export class EgressPolicy {
  private readonly ranges: { range: Range; text: string }[];
  private readonly lookups = new Map<number, LookupFn>();

  constructor(
    cidrs: string[],
    private readonly endpoints?: OwnEndpoints,
  ) {
    this.ranges = cidrs.map((text) => ({ range: ipaddr.parseCIDR(text) as Range, text }));
  }

  /** Settles once the policy knows the addresses of the service's own endpoints (names resolved once). */
  ready(): Promise<void> {
    return this.endpoints?.ready ?? Promise.resolve();
  }

  /** The rule that denies connecting to `address` (an IP) at `port`: a CIDR, or one of the service's own endpoints. */
  deniesAt(address: string, port: number): string | undefined {
    return this.denies(address) ?? this.endpoints?.denies(address, port);
  }

  /**
   * The rule that denies `address` (an IP), or undefined when it may be reached. An address of 0.0.0.0/8 or `::`
   * connects to this host's own listeners (as loopback does), so it is judged as loopback as well as itself.
   */
  denies(address: string): string | undefined {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.process(address); // IPv4-mapped IPv6 (::ffff:a.b.c.d) is checked as IPv4
    } catch {
      return 'unparseable address';
    }
    const rule = this.match(parsed);
    if (rule) return rule;
    if (parsed.kind() === 'ipv4' && parsed.range() === 'unspecified') return this.match(ipaddr.parse('127.0.0.1'));
    if (parsed.kind() === 'ipv6' && parsed.range() === 'unspecified') return this.match(ipaddr.parse('::1')) ?? this.match(ipaddr.parse('127.0.0.1'));
    return undefined;
  }

  private match(parsed: ipaddr.IPv4 | ipaddr.IPv6): string | undefined {
    for (const { range, text } of this.ranges) {
      if (parsed.kind() === range[0].kind() && parsed.match(range)) return text;
    }
    return undefined;
  }

  /** Throws EgressDeniedError when `host` is an IP literal that the policy denies at `port`; names pass (lookup checks them). */
  checkTarget(host: string, port: number): void {
    const address = bare(host);
    if (!net.isIP(address)) return;
    const rule = this.deniesAt(address, port);
    if (rule) throw new EgressDeniedError(host, address, rule);
  }

  /**
   * Why a target given to the API (a TCP share's, a health check's) is one of the service's own endpoints, or
   * undefined: an IP literal as it is, a name by what it resolves to now (a name that does not resolve passes;
   * the connection is checked again whenever it is made).
   */
  async ownEndpointRefusal(host: string, port: number): Promise<EgressDeniedError | undefined> {
    if (!this.endpoints) return undefined;
    await this.ready();
    const address = bare(host);
    let addresses: string[];
    if (net.isIP(address)) addresses = [address];
    else {
      try {
        addresses = (await dns.promises.lookup(address, { all: true })).map((a) => a.address);
      } catch {
        return undefined;
      }
    }
    for (const a of addresses) {
      const rule = this.endpoints.denies(a, port);
      if (rule) return new EgressDeniedError(host, a, rule);
    }
    return undefined;
  }

  /** A dns.lookup replacement for http.request / net.connect (`lookup` option) of a connection to `port`. */
  lookupFor(port: number): LookupFn {
    let lookup = this.lookups.get(port);
    if (!lookup) {
      lookup = (hostname, options, callback) => this.lookup(hostname, options, callback, port);
      this.lookups.set(port, lookup);
    }
    return lookup;
  }

  private lookup(hostname: string, options: dns.LookupOptions | number | LookupCallback, callback: LookupCallback | undefined, port: number): void {
    const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
    const opts: dns.LookupOptions = typeof options === 'object' ? options : typeof options === 'number' ? { family: options } : {};
    void this.ready().then(() =>
      dns.lookup(hostname, { ...opts, all: true }, (err, addresses) => {
        if (err) return cb(err, opts.all ? [] : '', undefined);
        const allowed = addresses.filter((a) => !this.deniesAt(a.address, port));
        if (allowed.length === 0) {
          const first = addresses[0];
          const denied = new EgressDeniedError(hostname, first?.address ?? '?', first ? this.deniesAt(first.address, port)! : 'no address');
          return cb(denied as unknown as NodeJS.ErrnoException, opts.all ? [] : '', undefined);
        }
        if (opts.all) cb(null, allowed);
        else cb(null, allowed[0].address, allowed[0].family);
      }),
    );
  }

  close(): void {
    this.endpoints?.close();
  }
}

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

let current: { cfg: Config; policy: EgressPolicy } | undefined;

/** The policy of the current configuration: HUB_EGRESS_DENY and the service's own endpoints. */
export function egressPolicy(): EgressPolicy {
  const cfg = config();
  if (current?.cfg !== cfg) {
    current?.policy.close();
    current = { cfg, policy: new EgressPolicy(cfg.edge.egressDeny, new OwnEndpoints(ownEndpointsOf(cfg))) };
  }
  return current.policy;
}
