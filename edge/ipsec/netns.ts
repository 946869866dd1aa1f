/**
 * The network of one IPsec tunnel: a namespace of its own (so customers' peer CIDRs may overlap), joined by a veth
 * pair to the "internet" (HUB_IPSEC_WAN_NETNS, or the host's own namespace). The tunnel's side holds its outside
 * address and the AWS side of its inside /30, the WAN side the customer side of that /30 and a route to the
 * outside address; the load balancer address sits on the namespace's loopback, inside the VPC CIDR that the
 * tunnel's traffic selectors name.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const NETNS_PREFIX = 'ehv-';

/** The namespace of a tunnel (stable: the data plane finds its own after a restart). */
export const tunnelNetns = (tunnelId: string) => `${NETNS_PREFIX}${createHash('sha256').update(tunnelId).digest('hex').slice(0, 10)}`;
const linkNames = (ns: string) => ({
  wan: `${ns.slice(NETNS_PREFIX.length, NETNS_PREFIX.length + 10)}w`,
  tunnel: `${ns.slice(NETNS_PREFIX.length, NETNS_PREFIX.length + 10)}t`,
});

async function ip(args: string[]): Promise<string> {
  const { stdout } = await run('ip', args);
  return stdout;
}

/** `ip` in the WAN namespace (or the host's). */
const inWan = (wanNetns: string | undefined, args: string[]) => ip(wanNetns ? ['-n', wanNetns, ...args] : args);

export interface TunnelNetwork {
  ns: string;
  outside: string;
  /** The AWS side (.1, in the tunnel's namespace) and the customer side (.2, WAN side) of the inside /30. */
  insideAws: string;
  insideCustomer: string;
  nlbPrivateIp: string;
}

/** Creates (or re-creates from scratch) the tunnel's namespace and its link to the WAN. */
export async function createTunnelNetwork(net: TunnelNetwork, wanNetns: string | undefined): Promise<void> {
  await removeTunnelNetwork(net.ns, wanNetns);
  const links = linkNames(net.ns);
  await ip(['netns', 'add', net.ns]);
  try {
    await ip(['-n', net.ns, 'link', 'set', 'lo', 'up']);
    await ip(['-n', net.ns, 'addr', 'add', `${net.nlbPrivateIp}/32`, 'dev', 'lo']);
    await inWan(wanNetns, ['link', 'add', links.wan, 'type', 'veth', 'peer', 'name', links.tunnel]);
    await inWan(wanNetns, ['link', 'set', links.tunnel, 'netns', net.ns]);
    await inWan(wanNetns, ['addr', 'add', `${net.insideCustomer}/30`, 'dev', links.wan]);
    await inWan(wanNetns, ['link', 'set', links.wan, 'up']);
    await inWan(wanNetns, ['route', 'replace', `${net.outside}/32`, 'via', net.insideAws, 'dev', links.wan]);
    await ip(['-n', net.ns, 'addr', 'add', `${net.insideAws}/30`, 'dev', links.tunnel]);
    await ip(['-n', net.ns, 'addr', 'add', `${net.outside}/32`, 'dev', links.tunnel]);
    await ip(['-n', net.ns, 'link', 'set', links.tunnel, 'up']);
    await ip(['-n', net.ns, 'route', 'add', 'default', 'via', net.insideCustomer, 'src', net.outside]);
    // the WAN namespace forwards between peers and tunnels (the host's own setting is left alone)
    if (wanNetns) await run('ip', ['netns', 'exec', wanNetns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  } catch (err) {
    await removeTunnelNetwork(net.ns, wanNetns);
    throw err;
  }
}

/** Processes still in the namespace (charon, the relay) are killed, then the namespace and its link go. */
export async function removeTunnelNetwork(ns: string, wanNetns: string | undefined): Promise<void> {
  const pids = await ip(['netns', 'pids', ns]).catch(() => '');
  for (const pid of pids.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await inWan(wanNetns, ['link', 'del', linkNames(ns).wan]).catch(() => undefined);
  await ip(['netns', 'del', ns]).catch(() => undefined);
}

/**
 * The file that marks a tunnel namespace as this deployment's: `<dataDir>/<ns>.netns`, written before the namespace
 * is made and removed after it is gone. Namespaces are machine-wide, and another deployment on the machine (another
 * data directory, its own database) has tunnel namespaces of its own that are none of ours to remove.
 */
export const netnsMarker = (ipsecDir: string, ns: string) => path.join(ipsecDir, `${ns}.netns`);

/** Tunnel namespaces on this machine that this deployment made (`ipsecDir` holds their markers). */
export async function tunnelNetworks(ipsecDir: string): Promise<string[]> {
  const out = await ip(['netns', 'list']).catch(() => '');
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0])
    .filter((n) => n?.startsWith(NETNS_PREFIX) && existsSync(netnsMarker(ipsecDir, n)));
}
