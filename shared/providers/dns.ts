import { promises as dnsPromises } from 'node:dns';
import { config } from '../config.js';

/** Looks up the records a custom frontend needs, as the public (or configured) resolvers see them. */
export interface DnsLookup {
  /** IPv4 addresses of `name`; empty when the name has none (or does not exist). */
  addresses(name: string): Promise<string[]>;
  /** The CNAME target of `name` (lower case, no trailing dot), or null. */
  canonicalName(name: string): Promise<string | null>;
}

const ABSENT = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'ENONAME']);

function absentAs<T>(fallback: T) {
  return (err: NodeJS.ErrnoException): T => {
    if (err.code && ABSENT.has(err.code)) return fallback;
    throw err;
  };
}

/** Node's DNS resolver pointed at HUB_DNS_SERVERS (the system resolvers when unset). */
function nodeDnsLookup(servers: string[] = config().dnsServers): DnsLookup {
  const resolver = new dnsPromises.Resolver({ timeout: 2000, tries: 2 });
  if (servers.length) resolver.setServers(servers);
  return {
    addresses: (name) => resolver.resolve4(name).catch(absentAs<string[]>([])),
    canonicalName: async (name) => {
      const names = await resolver.resolveCname(name).catch(absentAs<string[]>([]));
      return names.length ? normalizeName(names[0]) : null;
    },
  };
}

export const normalizeName = (name: string) => name.toLowerCase().replace(/\.$/, '');

export const dnsLookup = (): DnsLookup => nodeDnsLookup();
