import { QueryTypes } from 'sequelize';
import { db, preparedQuery } from '../db.js';
import { notFound } from '../errors.js';

/*
 * The things metrics are about, looked up inside one hub only (an id of another hub is simply not found). Shares
 * and IPsec resources belong to other areas: they are read here with plain SQL, not through those areas' models.
 */

async function rows<T extends object>(sql: string, bind: unknown[]): Promise<T[]> {
  return db().query<T>(sql, { bind, type: QueryTypes.SELECT });
}

export async function shareInHub(hubId: string, zId: string): Promise<{ zId: string; envZId: string | null }> {
  const [share] = await rows<{ z_id: string; env_z_id: string | null }>('SELECT z_id, env_z_id FROM shares WHERE hub_id = $1 AND z_id = $2', [hubId, zId]);
  if (!share) throw notFound('share', zId);
  return { zId: share.z_id, envZId: share.env_z_id };
}

export async function environmentInHub(hubId: string, envZId: string): Promise<void> {
  const [env] = await rows('SELECT 1 FROM environments WHERE hub_id = $1 AND env_z_id = $2', [hubId, envZId]);
  if (!env) throw notFound('environment', envZId);
}

export async function ipsecShareInHub(hubId: string, id: string): Promise<void> {
  const [share] = await rows('SELECT 1 FROM ipsec_shares WHERE hub_id = $1 AND id = $2', [hubId, id]);
  if (!share) throw notFound('IPsec share', id);
}

/** The ids of the IPsec shares published on a tunnel of the hub (its metrics are their sum); 404 for another hub's tunnel. */
export async function ipsecTunnelShareIds(hubId: string, tunnelId: string): Promise<string[]> {
  const [tunnel] = await rows('SELECT 1 FROM ipsec_tunnels WHERE hub_id = $1 AND id = $2', [hubId, tunnelId]);
  if (!tunnel) throw notFound('IPsec tunnel', tunnelId);
  const shares = await rows<{ id: string }>('SELECT id FROM ipsec_shares WHERE hub_id = $1 AND ipsec_tunnel_id = $2', [hubId, tunnelId]);
  return shares.map((s) => s.id);
}

interface HubShare {
  id: string;
  scope: 'share' | 'ipsecShare';
}

/**
 * Every share of the hub, plain ones first, then IPsec shares that are not deleted, each in creation order. Two named
 * statements (a sparklines answer lists up to 1,000 shares: no ORM between the rows and the list).
 */
export async function sharesOfHub(hubId: string): Promise<HubShare[]> {
  const [plain, ipsec] = await Promise.all([
    preparedQuery<{ id: string }>('metrics-shares-of-hub', 'SELECT z_id AS id FROM shares WHERE hub_id = $1 ORDER BY created_at, z_id', [hubId]),
    preparedQuery<{ id: string }>(
      'metrics-ipsec-shares-of-hub',
      `SELECT id FROM ipsec_shares WHERE hub_id = $1 AND status <> 'DELETED' ORDER BY created_at, id`,
      [hubId],
    ),
  ]);
  const shares: HubShare[] = new Array(plain.length + ipsec.length);
  for (let i = 0; i < plain.length; i++) shares[i] = { id: plain[i]!.id, scope: 'share' };
  for (let i = 0; i < ipsec.length; i++) shares[plain.length + i] = { id: ipsec[i]!.id, scope: 'ipsecShare' };
  return shares;
}
