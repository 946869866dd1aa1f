/**
 * The address rules of IPsec tunnels (peerPublicIp must be public unicast; peerCidr is any IPv4 CIDR), on ipaddr.js
 * for parsing and range membership. Addresses are also handled as 32-bit integers, because the local provider
 * allocates them by counting through a block.
 */
import ipaddr from 'ipaddr.js';

export interface Cidr {
  network: number;
  prefix: number;
  /** Number of addresses in the block. */
  size: number;
}

/** Strict dotted-quad (no leading zeros, no shorthand) to a 32-bit unsigned integer, or undefined. */
export function parseIpv4(text: string): number | undefined {
  if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
  return ipaddr.IPv4.parse(text)
    .toByteArray()
    .reduce((n, octet) => n * 256 + octet, 0);
}

export function formatIpv4(n: number): string {
  return ipaddr.fromByteArray([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]).toString();
}

/** `a.b.c.d/n` whose host bits are zero, or an explanation of what is wrong. */
export function parseCidr(text: string): Cidr | string {
  // four-part decimal address and a prefix without leading zeros; ipaddr.js alone would take 10.1/8 or 010.0.0.0/8
  if (!ipaddr.IPv4.isValidCIDRFourPartDecimal(text) || !/\/(0|[1-9]\d?)$/.test(text)) return 'must be an IPv4 CIDR such as 10.0.0.0/24';
  const [address, prefix] = ipaddr.IPv4.parseCIDR(text);
  const network = ipaddr.IPv4.networkAddressFromCIDR(text);
  if (network.toString() !== address.toString()) return `must name its network address (did you mean ${network}/${prefix}?)`;
  return { network: parseIpv4(network.toString())!, prefix, size: 2 ** (32 - prefix) };
}

export const cidrContains = (cidr: Cidr, ip: number) => ip >= cidr.network && ip < cidr.network + cidr.size;
export const formatCidr = (cidr: Pick<Cidr, 'network' | 'prefix'>) => `${formatIpv4(cidr.network)}/${cidr.prefix}`;

function block(text: string): Cidr {
  const parsed = parseCidr(text);
  if (typeof parsed === 'string') throw new Error(`bad built-in CIDR ${text}`);
  return parsed;
}

/** Ranges that are not public unicast. The documentation ranges (TEST-NET-1/2/3) are deliberately absent. */
const NOT_PUBLIC: [string, Cidr][] = [
  ['a "this network" address (0.0.0.0/8)', block('0.0.0.0/8')],
  ['a private address (10.0.0.0/8)', block('10.0.0.0/8')],
  ['a shared address (100.64.0.0/10)', block('100.64.0.0/10')],
  ['a loopback address (127.0.0.0/8)', block('127.0.0.0/8')],
  ['a link-local address (169.254.0.0/16)', block('169.254.0.0/16')],
  ['a private address (172.16.0.0/12)', block('172.16.0.0/12')],
  ['a private address (192.168.0.0/16)', block('192.168.0.0/16')],
  ['a multicast address (224.0.0.0/4)', block('224.0.0.0/4')],
  ['the broadcast address', block('255.255.255.255/32')],
  ['a reserved address (240.0.0.0/4)', block('240.0.0.0/4')],
];

/** Undefined when `text` is a public unicast IPv4 address, else why it is not. */
export function publicUnicastProblem(text: string): string | undefined {
  const ip = parseIpv4(text);
  if (ip === undefined) return 'must be an IPv4 address such as 203.0.113.10';
  const hit = NOT_PUBLIC.find(([, cidr]) => cidrContains(cidr, ip));
  return hit ? `must be a public unicast IPv4 address, not ${hit[0]}` : undefined;
}

/**
 * Addresses of a VPC subnet a load balancer may take: AWS reserves the first four addresses and the last one.
 * Undefined when usable, else why not.
 */
export function subnetAddressProblem(vpc: Cidr, ip: number): string | undefined {
  if (!cidrContains(vpc, ip)) return `must lie inside the VPC CIDR ${formatCidr(vpc)}`;
  const offset = ip - vpc.network;
  if (offset < 4 || offset === vpc.size - 1) return `is reserved in the VPC CIDR ${formatCidr(vpc)} (the first four addresses and the last one are)`;
  return undefined;
}

/** The VPC CIDR from configuration, validated. */
export function vpcCidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (typeof parsed === 'string') throw new Error(`HUB_VPC_CIDR ${parsed}`);
  if (parsed.prefix > 28) throw new Error('HUB_VPC_CIDR must be a /28 or larger');
  return parsed;
}

const HOSTNAME_LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const IPV6_ISH = /^[0-9A-Fa-f:.]+$/;

/** Undefined when `text` is `host:port` (hostname, IPv4 or [IPv6]; port 1-65535), else why it is not. */
export function hostPortProblem(text: string): string | undefined {
  const match = /^(\[[^\]]*\]|[^:[\]]+):(\d{1,5})$/.exec(text);
  if (!match) return 'must be host:port, e.g. db.internal:5432';
  const [, host, portText] = match;
  const port = Number(portText);
  if (port < 1 || port > 65535) return 'port must be between 1 and 65535';
  if (host.startsWith('[')) {
    const inner = host.slice(1, -1);
    return IPV6_ISH.test(inner) && inner.includes(':') ? undefined : 'host in brackets must be an IPv6 address';
  }
  if (/^[\d.]+$/.test(host)) return parseIpv4(host) === undefined ? 'host is not a valid IPv4 address' : undefined;
  const labels = host.replace(/\.$/, '').split('.');
  if (host.length > 253 || !labels.every((l) => HOSTNAME_LABEL.test(l))) return 'host must be a hostname, an IPv4 address or a bracketed IPv6 address';
  return undefined;
}
