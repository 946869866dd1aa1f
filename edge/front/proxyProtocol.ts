/**
 * The PROXY protocol (HAProxy's, versions 1 and 2) a load balancer in front of the edge writes before the client's
 * bytes: the client's address and port, as the load balancer saw them. Only the header is read here; what follows
 * (a TLS ClientHello, an HTTP request) is left to the listener as it came.
 *
 * - Version 1: one text line `PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n` of at most 107 bytes, or `PROXY UNKNOWN ...`.
 * - Version 2: a 12-byte signature, version and command, family, a 16-bit length, the addresses (IPv4: 12 bytes,
 *   IPv6: 36), then TLVs (skipped). LOCAL (the load balancer's own health check) and families other than TCP or UDP
 *   over IPv4 or IPv6 carry no client: the connection's own address stands.
 *
 * Anything else (a bad line, an address that does not parse, a version 2 header longer than MAX_V2_LENGTH) is not a
 * header: the connection is refused.
 */
import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Version 2's signature: `\r\n\r\n\0\r\nQUIT\n`. */
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from('PROXY ');
/** Version 1's longest line (the specification's bound), CRLF included. */
const V1_MAX = 107;
/** Version 2's longest address block and TLVs taken (load balancers add a few hundred bytes of TLVs at most). */
export const MAX_V2_LENGTH = 2048;

interface ProxyHeader {
  /** Bytes of the header: the connection's own data starts after them. */
  length: number;
  /** The client's address and port; undefined: the connection's own (LOCAL, UNKNOWN, another family). */
  address?: string;
  port?: number;
}

/** What the first bytes of a connection say: a whole header, more bytes needed, or why they are not a header. */
type ProxyParse = { header: ProxyHeader } | { more: true } | { refused: string } | { none: true };

/** Whether `head` (the first bytes, however few) may still be the start of a PROXY header. */
function startsLike(head: Buffer, prefix: Buffer): boolean {
  const n = Math.min(head.length, prefix.length);
  return head.subarray(0, n).equals(prefix.subarray(0, n));
}

/**
 * Reads a PROXY header (either version) from the first bytes of a connection: the header, `more` while the bytes may
 * still be one, `refused` for a malformed one, and `none` when the connection does not begin with one at all (no
 * request line or TLS record begins like a PROXY header).
 */
export function parseProxyHeader(head: Buffer): ProxyParse {
  if (startsLike(head, V2_SIGNATURE)) return head.length < 16 ? { more: true } : parseV2(head);
  if (startsLike(head, V1_PREFIX)) return parseV1(head);
  return { none: true };
}

function parseV1(head: Buffer): ProxyParse {
  const end = head.indexOf('\r\n');
  if (end < 0) return head.length >= V1_MAX ? { refused: 'a PROXY line longer than 107 bytes' } : { more: true };
  if (end + 2 > V1_MAX) return { refused: 'a PROXY line longer than 107 bytes' };
  const parts = head.subarray(0, end).toString('latin1').split(' ');
  const length = end + 2;
  if (parts[1] === 'UNKNOWN') return { header: { length } };
  if (parts.length !== 6) return { refused: 'a PROXY line that is not PROXY TCP4|TCP6 SRC DST SPORT DPORT' };
  const [, family, source, destination, sport, dport] = parts;
  const valid = family === 'TCP4' ? isIPv4 : family === 'TCP6' ? isIPv6 : undefined;
  if (!valid || !valid(source) || !valid(destination)) return { refused: `a PROXY line with bad addresses (${family})` };
  if (!isPort(sport) || !isPort(dport)) return { refused: 'a PROXY line with bad ports' };
  return { header: { length, address: source, port: Number(sport) } };
}

const isPort = (text: string) => /^(0|[1-9]\d{0,4})$/.test(text) && Number(text) <= 65535;

function parseV2(head: Buffer): ProxyParse {
  const versionCommand = head[12];
  if (versionCommand >> 4 !== 2) return { refused: 'a PROXY header of an unknown version' };
  const command = versionCommand & 0x0f;
  if (command > 1) return { refused: 'a PROXY header with an unknown command' };
  const block = head.readUInt16BE(14);
  if (block > MAX_V2_LENGTH) return { refused: `a PROXY header over ${MAX_V2_LENGTH} bytes` };
  const length = 16 + block;
  if (head.length < length) return { more: true };
  // LOCAL: the load balancer speaking for itself (a health check)
  if (command === 0) return { header: { length } };
  const family = head[13] >> 4;
  const transport = head[13] & 0x0f;
  if (transport !== 1 && transport !== 2) return { header: { length } };
  if (family === 1) {
    if (block < 12) return { refused: 'a PROXY header too short for its IPv4 addresses' };
    return { header: { length, address: ipaddr.fromByteArray([...head.subarray(16, 20)]).toString(), port: head.readUInt16BE(24) } };
  }
  if (family === 2) {
    if (block < 36) return { refused: 'a PROXY header too short for its IPv6 addresses' };
    return { header: { length, address: ipaddr.fromByteArray([...head.subarray(16, 32)]).toString(), port: head.readUInt16BE(48) } };
  }
  return { header: { length } };
}
