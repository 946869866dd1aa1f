import { randomBytes, randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { QueryTypes, UniqueConstraintError } from 'sequelize';
import { config } from '../config.js';
import { db } from '../db.js';
import type { TunnelOptions } from '../ipsec/options.js';
import { decryptSecret, encryptSecret } from '../secrets.js';
import { formatCidr, formatIpv4, parseCidr, parseIpv4, subnetAddressProblem, vpcCidr, type Cidr } from '../ipsec/addresses.js';
import {
  DEFAULT_TUNNEL_OPTIONS,
  IpsecProviderError,
  type IpsecProvider,
  type ProvisionedShare,
  type ProvisionedTunnel,
  type ShareSpec,
  type TunnelSpec,
  type TunnelStatus,
} from './ipsecTypes.js';

/**
 * Where local VPN endpoints take their outside (public) addresses: 198.18.0.0/15 is set aside for network
 * benchmarking (RFC 2544) and never routed on the internet, so a local address can never be mistaken for a real one.
 */
const OUTSIDE_ADDRESS_POOL = '198.18.0.0/15';

/** AWS refuses these /30 blocks as inside tunnel CIDRs. */
export const RESERVED_INSIDE_CIDRS = [
  '169.254.0.0/30',
  '169.254.1.0/30',
  '169.254.2.0/30',
  '169.254.3.0/30',
  '169.254.4.0/30',
  '169.254.5.0/30',
  '169.254.169.252/30',
];

export type DataPlaneEvent = 'tunnel loaded' | 'tunnel unloaded' | 'listening' | 'closed';

const PSK_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._';
const PSK_LENGTH = 32;
const ALLOCATION_ATTEMPTS = 50;

/** A pre-shared key as AWS allows them: 8 to 64 of letters, digits, `.` and `_`, not starting with 0. */
function generatePreSharedKey(length = PSK_LENGTH): string {
  let key = '';
  while (key.length < length) {
    for (const byte of randomBytes(length)) {
      const char = PSK_ALPHABET[byte & 63]; // 64 symbols: unbiased
      if (key.length === 0 && char === '0') continue;
      if (key.length < length) key += char;
    }
  }
  return key;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

interface TunnelRow {
  tunnel_id: string;
  nlb_private_ip: string;
  nlb_dns_name: string;
  vpn_connection_id: string | null;
  outside_ip_address: string | null;
  inside_cidr: string | null;
  pre_shared_key_sealed: string | null;
  tunnel_options: TunnelOptions | null;
  state: string;
  released_at: Date | null;
}

function cidrOf(text: string): Cidr {
  const parsed = parseCidr(text);
  if (typeof parsed === 'string') throw new Error(`${text} ${parsed}`);
  return parsed;
}

const outsidePool = cidrOf(OUTSIDE_ADDRESS_POOL);
const linkLocal = cidrOf('169.254.0.0/16');
const reservedInside = new Set(RESERVED_INSIDE_CIDRS);

/**
 * The provider that does locally what a cloud would: allocates load balancer addresses from the VPC CIDR, outside
 * addresses, inside /30 blocks, pre-shared keys and resource ids, and keeps them in its own tables
 * (ipsec_local_*), where unique indexes keep every live allocation distinct. Each step takes HUB_PROVISION_DELAY_MS.
 * `HUB_IPSEC_PROVIDER=simulated` is this alone; the strongSwan provider (ipsecStrongswan.ts) adds the real data plane.
 */
export class LocalIpsecProvider implements IpsecProvider {
  private step(): Promise<void> {
    return sleep(config().provisionDelayMs);
  }

  async provisionTunnel(spec: TunnelSpec): Promise<ProvisionedTunnel> {
    await this.step(); // create the network load balancer
    await this.ensureLoadBalancer(spec);
    await this.step(); // create the site-to-site VPN connection
    await this.ensureVpnConnection(spec.tunnelId);
    await this.step(); // wait for the connection to become available
    await db().query(`UPDATE ipsec_local_tunnels SET state = 'available' WHERE tunnel_id = :id AND released_at IS NULL`, {
      replacements: { id: spec.tunnelId },
    });
    await this.dataPlane('tunnel loaded', spec.tunnelId);
    const row = await this.liveTunnel(spec.tunnelId);
    if (!row?.vpn_connection_id) throw new IpsecProviderError(`the VPN connection of tunnel ${spec.tunnelId} was deleted while it was being created`, true);
    return {
      nlbPrivateIp: row.nlb_private_ip,
      nlbDnsName: row.nlb_dns_name,
      vpnConnectionId: row.vpn_connection_id,
      outsideIpAddress: row.outside_ip_address!,
      insideCidr: row.inside_cidr!,
      preSharedKey: decryptSecret(row.pre_shared_key_sealed!),
      tunnelOptions: row.tunnel_options!,
    };
  }

  async teardownTunnel(tunnelId: string): Promise<void> {
    await this.step(); // delete the VPN connection
    await db().query(`UPDATE ipsec_local_tunnels SET state = 'deleting' WHERE tunnel_id = :id AND released_at IS NULL`, {
      replacements: { id: tunnelId },
    });
    await this.dataPlane('tunnel unloaded', tunnelId);
    await this.step(); // delete the load balancer and its listeners
    await db().transaction(async (transaction) => {
      await db().query(`UPDATE ipsec_local_listeners SET released_at = now() WHERE tunnel_id = :id AND released_at IS NULL`, {
        replacements: { id: tunnelId },
        transaction,
      });
      await db().query(`UPDATE ipsec_local_tunnels SET state = 'deleted', released_at = now() WHERE tunnel_id = :id AND released_at IS NULL`, {
        replacements: { id: tunnelId },
        transaction,
      });
    });
  }

  async provisionShare(spec: ShareSpec): Promise<ProvisionedShare> {
    const tunnel = await this.liveTunnel(spec.tunnelId);
    if (!tunnel || tunnel.state !== 'available') {
      throw new IpsecProviderError(`IPsec tunnel ${spec.tunnelId} has no available load balancer to publish on`, true);
    }
    await this.step(); // create the target group for the share's target
    try {
      await db().query(
        `INSERT INTO ipsec_local_listeners (share_id, tunnel_id, listener_id, ingress_port, target)
         VALUES (:shareId, :tunnelId, :listenerId, :port, :target)
         ON CONFLICT (share_id) DO UPDATE SET
           tunnel_id = EXCLUDED.tunnel_id, ingress_port = EXCLUDED.ingress_port, target = EXCLUDED.target, updated_at = now(),
           listener_id = CASE WHEN ipsec_local_listeners.released_at IS NULL THEN ipsec_local_listeners.listener_id ELSE EXCLUDED.listener_id END,
           released_at = NULL, listening_at = NULL`,
        { replacements: { shareId: spec.shareId, tunnelId: spec.tunnelId, listenerId: `listener-${hex(8)}`, port: spec.ingressPort, target: spec.target } },
      );
    } catch (err) {
      if (err instanceof UniqueConstraintError) {
        throw new IpsecProviderError(`port ${spec.ingressPort} already has a listener on the load balancer of IPsec tunnel ${spec.tunnelId}`, true);
      }
      throw err;
    }
    await this.step(); // wait for the listener to become active
    await this.dataPlane('listening', spec.shareId);
    const [row] = await db().query<{ listener_id: string }>('SELECT listener_id FROM ipsec_local_listeners WHERE share_id = :id AND released_at IS NULL', {
      replacements: { id: spec.shareId },
      type: QueryTypes.SELECT,
    });
    if (!row) throw new IpsecProviderError(`the listener of IPsec share ${spec.shareId} was deleted while it was being created`, true);
    return { listenerId: row.listener_id };
  }

  async teardownShare(shareId: string): Promise<void> {
    await this.step(); // delete the listener and its target group
    await db().query('UPDATE ipsec_local_listeners SET released_at = now() WHERE share_id = :id AND released_at IS NULL', {
      replacements: { id: shareId },
    });
    await this.dataPlane('closed', shareId);
  }

  /**
   * Waits for the data plane to act on a change (strongSwan: the edge holding the IPsec host role loads or unloads
   * the tunnel, opens or closes the listener). Nothing runs behind the simulated provider's records.
   */
  protected async dataPlane(_event: DataPlaneEvent, _id: string): Promise<void> {}

  async releaseTunnels(tunnelIds: string[]): Promise<void> {
    await db().transaction(async (transaction) => {
      await db().query(`UPDATE ipsec_local_listeners SET released_at = now() WHERE tunnel_id IN (:ids) AND released_at IS NULL`, {
        replacements: { ids: tunnelIds },
        transaction,
      });
      await db().query(`UPDATE ipsec_local_tunnels SET state = 'deleted', released_at = now() WHERE tunnel_id IN (:ids) AND released_at IS NULL`, {
        replacements: { ids: tunnelIds },
        transaction,
      });
    });
  }

  async tunnelStatus(tunnelId: string): Promise<TunnelStatus | undefined> {
    const row = await this.liveTunnel(tunnelId);
    if (!row?.outside_ip_address) return undefined;
    // Nothing local can speak IKE with the peer, so the tunnel is honestly reported DOWN until one could.
    return {
      state: row.state,
      tunnels: [{ outsideIpAddress: row.outside_ip_address, status: 'DOWN', statusMessage: 'no IKE negotiation with the customer gateway yet' }],
    };
  }

  private async tunnelRow(tunnelId: string): Promise<TunnelRow | undefined> {
    const [row] = await db().query<TunnelRow>(
      `SELECT tunnel_id, host(nlb_private_ip) AS nlb_private_ip, nlb_dns_name, vpn_connection_id,
              host(outside_ip_address) AS outside_ip_address, inside_cidr::text AS inside_cidr,
              pre_shared_key_sealed, tunnel_options, state, released_at
         FROM ipsec_local_tunnels WHERE tunnel_id = :id`,
      { replacements: { id: tunnelId }, type: QueryTypes.SELECT },
    );
    return row;
  }

  private async liveTunnel(tunnelId: string): Promise<TunnelRow | undefined> {
    const row = await this.tunnelRow(tunnelId);
    return row && !row.released_at ? row : undefined;
  }

  /** The load balancer of the tunnel: found again on a repeat call, else created on the pinned or a free address. */
  private async ensureLoadBalancer(spec: TunnelSpec): Promise<TunnelRow> {
    const existing = await this.tunnelRow(spec.tunnelId);
    if (existing?.released_at) throw new IpsecProviderError(`IPsec tunnel ${spec.tunnelId} was deleted; it cannot be provisioned again`, true);
    if (existing) return existing;
    const vpc = vpcCidr(config().vpcCidr);
    if (spec.nlbPrivateIp) {
      const ip = parseIpv4(spec.nlbPrivateIp);
      const problem = ip === undefined ? 'is not an IPv4 address' : subnetAddressProblem(vpc, ip);
      if (problem) throw new IpsecProviderError(`nlbPrivateIp ${spec.nlbPrivateIp} ${problem}`, true);
      const row = await this.insertLoadBalancer(spec.tunnelId, spec.nlbPrivateIp);
      if (!row) throw new IpsecProviderError(`nlbPrivateIp ${spec.nlbPrivateIp} is already allocated to another load balancer`, true);
      return row;
    }
    for (let attempt = 0; attempt < ALLOCATION_ATTEMPTS; attempt++) {
      const candidate = await this.freeVpcAddress(vpc, spec.tunnelId);
      if (!candidate) throw new IpsecProviderError(`no free address left in the VPC CIDR ${formatCidr(vpc)}`, true);
      const row = await this.insertLoadBalancer(spec.tunnelId, candidate);
      if (row) return row;
    }
    throw new IpsecProviderError('could not allocate a load balancer address: too much contention', false);
  }

  /** Inserts the load balancer row; undefined when the address was taken meanwhile. */
  private async insertLoadBalancer(tunnelId: string, ip: string): Promise<TunnelRow | undefined> {
    await db().query(`INSERT INTO ipsec_local_tunnels (tunnel_id, nlb_private_ip, nlb_dns_name) VALUES (:id, :ip, :dns) ON CONFLICT DO NOTHING`, {
      replacements: { id: tunnelId, ip, dns: `ipsec-${hex(4)}-${hex(8)}.elb.edgehub.internal` },
    });
    const row = await this.tunnelRow(tunnelId);
    // another call for this same tunnel may have won the race: its row is ours too
    return row && !row.released_at ? row : undefined;
  }

  /**
   * The lowest usable VPC address that no live load balancer holds and no tunnel waiting to be provisioned has
   * pinned (so that an automatic choice never takes an address someone asked for).
   */
  private async freeVpcAddress(vpc: Cidr, tunnelId: string): Promise<string | undefined> {
    const rows = await db().query<{ ip: string }>(
      `SELECT host(nlb_private_ip) AS ip FROM ipsec_local_tunnels WHERE released_at IS NULL
       UNION SELECT nlb_private_ip FROM ipsec_tunnels WHERE status = 'NEW' AND nlb_private_ip IS NOT NULL AND id <> :id`,
      { replacements: { id: tunnelId }, type: QueryTypes.SELECT },
    );
    const taken = new Set(rows.map((r) => r.ip));
    for (let ip = vpc.network + 4; ip < vpc.network + vpc.size - 1; ip++) {
      const text = formatIpv4(ip);
      if (!taken.has(text)) return text;
    }
    return undefined;
  }

  /** The VPN connection of the tunnel: made once, found again on repeat calls. */
  private async ensureVpnConnection(tunnelId: string): Promise<void> {
    for (let attempt = 0; attempt < ALLOCATION_ATTEMPTS; attempt++) {
      const row = await this.liveTunnel(tunnelId);
      if (!row) throw new IpsecProviderError(`the load balancer of IPsec tunnel ${tunnelId} is gone`, true);
      if (row.vpn_connection_id) return;
      try {
        await db().query(
          `UPDATE ipsec_local_tunnels
              SET vpn_connection_id = :vpnId, outside_ip_address = :outside, inside_cidr = :inside,
                  pre_shared_key_sealed = :psk, tunnel_options = :options
            WHERE tunnel_id = :id AND vpn_connection_id IS NULL AND released_at IS NULL`,
          {
            replacements: {
              id: tunnelId,
              vpnId: `vpn-${hex(9).slice(0, 17)}`,
              outside: randomAddress(outsidePool),
              inside: randomInsideCidr(),
              psk: encryptSecret(generatePreSharedKey()),
              options: JSON.stringify(DEFAULT_TUNNEL_OPTIONS),
            },
          },
        );
      } catch (err) {
        if (!(err instanceof UniqueConstraintError)) throw err;
        // an outside address or inside block collided with a live one: draw again
      }
    }
    throw new IpsecProviderError('could not allocate VPN connection addresses: too much contention', false);
  }
}

function randomAddress(pool: Cidr): string {
  return formatIpv4(pool.network + 1 + randomInt(pool.size - 2));
}

/** A random /30 of 169.254.0.0/16 outside the blocks AWS reserves. */
function randomInsideCidr(): string {
  for (;;) {
    const text = formatCidr({ network: linkLocal.network + randomInt(linkLocal.size / 4) * 4, prefix: 30 });
    if (!reservedInside.has(text)) return text;
  }
}
