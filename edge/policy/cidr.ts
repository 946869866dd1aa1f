/**
 * A set of CIDRs (IPv4 and IPv6) that answers "is this address in it" by binary search over sorted, merged ranges:
 * built once when a share's policy is loaded, logarithmic per request whatever the number of CIDRs. An IPv4-mapped
 * IPv6 address (::ffff:203.0.113.7, as a dual-stack listener reports IPv4 clients), in the list or as the client, is
 * its IPv4 address.
 */
import ipaddr from 'ipaddr.js';

/** Sorted, non-overlapping inclusive ranges: starts[i]..ends[i]. */
interface Ranges<T> {
  starts: T[];
  ends: T[];
}

function merged<T extends number | bigint>(ranges: [T, T][]): Ranges<T> {
  ranges.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const starts: T[] = [];
  const ends: T[] = [];
  for (const [start, end] of ranges) {
    const last = ends.length - 1;
    // adjacent or overlapping: one range (end + 1 >= start)
    if (last >= 0 && (typeof start === 'bigint' ? (ends[last] as bigint) + 1n >= start : (ends[last] as number) + 1 >= (start as number))) {
      if (end > ends[last]) ends[last] = end;
    } else {
      starts.push(start);
      ends.push(end);
    }
  }
  return { starts, ends };
}

function within<T extends number | bigint>(r: Ranges<T>, x: T): boolean {
  // the last range starting at or before x
  let lo = 0;
  let hi = r.starts.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (r.starts[mid] <= x) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found >= 0 && x <= r.ends[found];
}

const v4Number = (bytes: number[]) => ((bytes[0] << 24) >>> 0) + (bytes[1] << 16) + (bytes[2] << 8) + bytes[3];

function v6Number(bytes: number[]): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

/** A dotted-quad IPv4 address as a number, without allocating; -1 when it is not one. */
export function parseV4(text: string): number {
  let n = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (!digits || ++dots > 3) return -1;
      n = n * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || !digits) return -1;
  return n * 256 + part;
}

/** An address as [family, number]: 4 with a number, 6 with a bigint; undefined when it is not an address. */
export function addressKey(address: string): [4, number] | [6, bigint] | undefined {
  const v4 = parseV4(address);
  if (v4 >= 0) return [4, v4];
  if (address.startsWith('::ffff:')) {
    const mapped = parseV4(address.slice(7));
    if (mapped >= 0) return [4, mapped];
  }
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return undefined;
  }
  return parsed.kind() === 'ipv4' ? [4, v4Number(parsed.toByteArray())] : [6, v6Number(parsed.toByteArray())];
}

export class CidrSet {
  private readonly v4: Ranges<number>;
  private readonly v6: Ranges<bigint>;
  readonly size: number;

  /** `cidrs` were validated by the API; one that does not parse is left out. */
  constructor(cidrs: readonly string[]) {
    const v4: [number, number][] = [];
    const v6: [bigint, bigint][] = [];
    for (const cidr of cidrs) {
      let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
      try {
        parsed = ipaddr.parseCIDR(cidr);
      } catch {
        continue;
      }
      let [address, bits] = parsed;
      if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
        address = (address as ipaddr.IPv6).toIPv4Address();
        bits -= 96;
      }
      if (address.kind() === 'ipv4') {
        const n = v4Number(address.toByteArray());
        const size = 2 ** (32 - bits);
        const start = n - (n % size);
        v4.push([start, start + size - 1]);
      } else {
        const n = v6Number(address.toByteArray());
        const host = (1n << BigInt(128 - bits)) - 1n;
        const start = n & ~host;
        v6.push([start, start | host]);
      }
    }
    this.v4 = merged(v4);
    this.v6 = merged(v6);
    this.size = v4.length + v6.length;
  }

  has(address: string): boolean {
    const key = addressKey(address);
    if (!key) return false;
    return key[0] === 4 ? within(this.v4, key[1]) : within(this.v6, key[1]);
  }
}
