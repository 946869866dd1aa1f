import dns, { type LookupAddress } from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import ipaddr from 'ipaddr.js';
import { config } from './config.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** The error a refused connection fails with (code EGRESS_DENIED), naming the address and the rule. */
export class EgressDeniedError extends Error {
  readonly code = 'EGRESS_DENIED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly rule: string,
  ) {
    super(`target ${host}${host === address ? '' : ` (${address})`} is denied by the egress policy (${rule})`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * HUB_EGRESS_DENY: CIDRs that share targets and health-check targets may never reach. The check is made on the
 * address actually connected to: `lookup` resolves, checks every address, and hands the connection only addresses
 * that passed, so a name that resolves differently between a check and the connect (DNS rebinding) cannot slip by.
 * IP literals skip lookup in node:net, so callers check them with `checkHost` first.
 */
export class EgressPolicy {
  private readonly ranges: { range: Range; text: string }[];

  constructor(cidrs: string[]) {
    this.ranges = cidrs.map((text) => ({ range: ipaddr.parseCIDR(text) as Range, text }));
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

  /** Throws EgressDeniedError when `host` is an IP literal that the policy denies; names pass (lookup checks them). */
  checkHost(host: string): void {
    const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    if (!net.isIP(bare)) return;
    const rule = this.denies(bare);
    if (rule) throw new EgressDeniedError(host, bare, rule);
  }

  /** A dns.lookup replacement for http.request / net.connect (`lookup` option). */
  readonly lookup = (hostname: string, options: dns.LookupOptions | number | LookupCallback, callback?: LookupCallback): void => {
    const cb = (typeof options === 'function' ? options : callback) as LookupCallback;
    const opts: dns.LookupOptions = typeof options === 'object' ? options : typeof options === 'number' ? { family: options } : {};
    dns.lookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return cb(err, opts.all ? [] : '', undefined);
      const allowed = addresses.filter((a) => !this.denies(a.address));
      if (allowed.length === 0) {
        const first = addresses[0];
        const denied = new EgressDeniedError(hostname, first?.address ?? '?', first ? this.denies(first.address)! : 'no address');
        return cb(denied as unknown as NodeJS.ErrnoException, opts.all ? [] : '', undefined);
      }
      if (opts.all) cb(null, allowed);
      else cb(null, allowed[0].address, allowed[0].family);
    });
  };
}

/**
 * Whether `address` is one of this host's own: loopback, unspecified (0.0.0.0/8, `::`, which connect to the host
 * itself) or an address of one of its interfaces. Used to keep the edge from proxying to its own listeners.
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

let current: { key: string; policy: EgressPolicy } | undefined;

/** The policy of the current configuration. */
export function egressPolicy(): EgressPolicy {
  const cidrs = config().edge.egressDeny;
  const key = cidrs.join(',');
  if (current?.key !== key) current = { key, policy: new EgressPolicy(cidrs) };
  return current.policy;
}
