/**
 * IPsec on strongSwan: the local provider's allocations (addresses, keys,
 * listeners in ipsec_local_*) plus a real data plane. The data plane runs in the edge process that holds the IPsec
 * host role (edge/ipsec/host.ts): one network namespace and one charon per tunnel, a responder on the tunnel's
 * outside address with its pre-shared key and options, and a TCP listener per IPsec share on the load balancer
 * address inside that namespace. This provider, in the worker, waits until the data plane reports that it acted:
 * a tunnel is DEPLOYED only once charon holds its connection, DELETED only once it is gone.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { QueryTypes } from 'sequelize';
import { db } from '../db.js';
import { LocalIpsecProvider, type DataPlaneEvent } from './ipsecLocal.js';
import { IpsecProviderError, type TunnelStatus } from './ipsecTypes.js';

const CONDITIONS: Record<DataPlaneEvent, string> = {
  'tunnel loaded': `SELECT 1 FROM ipsec_local_tunnels WHERE tunnel_id = :id AND loaded_at IS NOT NULL`,
  'tunnel unloaded': `SELECT 1 FROM ipsec_local_tunnels WHERE tunnel_id = :id AND loaded_at IS NULL`,
  listening: `SELECT 1 FROM ipsec_local_listeners WHERE share_id = :id AND released_at IS NULL AND listening_at IS NOT NULL`,
  closed: `SELECT 1 FROM ipsec_local_listeners WHERE share_id = :id AND listening_at IS NULL`,
};

export class StrongswanIpsecProvider extends LocalIpsecProvider {
  constructor(private readonly waitMs = 30_000) {
    super();
  }

  protected override async dataPlane(event: DataPlaneEvent, id: string): Promise<void> {
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const rows = await db().query(CONDITIONS[event], { replacements: { id }, type: QueryTypes.SELECT });
      if (rows.length) return;
      // retried by the job with backoff: the edge holding the IPsec host role may be starting or restarting
      if (Date.now() > deadline)
        throw new IpsecProviderError(
          `the IPsec data plane did not report '${event}' for ${id} within ${this.waitMs / 1000} s (is an edge process running as root with strongSwan?)`,
          false,
        );
      await sleep(100);
    }
  }

  override async tunnelStatus(tunnelId: string): Promise<TunnelStatus | undefined> {
    const [row] = await db().query<{
      state: string;
      outside: string | null;
      loaded_at: Date | null;
      sa_status: string | null;
      sa_status_message: string | null;
    }>(
      `SELECT state, host(outside_ip_address) AS outside, loaded_at, sa_status, sa_status_message FROM ipsec_local_tunnels WHERE tunnel_id = :id AND released_at IS NULL`,
      { replacements: { id: tunnelId }, type: QueryTypes.SELECT },
    );
    if (!row?.outside) return undefined;
    const status = row.loaded_at ? (row.sa_status ?? 'DOWN') : 'DOWN';
    const statusMessage = row.loaded_at
      ? (row.sa_status_message ?? 'charon holds the connection; no report yet')
      : 'charon does not hold the connection (the IPsec host is not running)';
    return { state: row.state, tunnels: [{ outsideIpAddress: row.outside, status, statusMessage }] };
  }
}
