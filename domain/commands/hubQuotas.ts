import { QueryTypes, type Transaction } from 'sequelize';
import { config } from '../../shared/config.js';
import { notFound, quotaExceeded } from '../../shared/errors.js';
import { Hub, type HubQuotaOverrides } from '../models/Hub.js';

/** What a hub may hold: shares (TCP ones included) and TCP shares, each of which holds one port of HUB_EDGE_TCP_PORTS. */
interface HubQuotas {
  shares: number;
  tcpPorts: number;
}

/** The quotas that apply to a hub: the operator's own for it, else the service's defaults (HUB_MAX_SHARES, HUB_MAX_TCP_PORTS). */
export function hubQuotas(overrides: HubQuotaOverrides | null | undefined): HubQuotas {
  const { sharesPerHub, tcpPortsPerHub } = config().quotas;
  return { shares: overrides?.shares ?? sharesPerHub, tcpPorts: overrides?.tcpPorts ?? tcpPortsPerHub };
}

/** The operator's change of a hub's quotas: a number sets one, `null` returns it to the default, absent keeps it. */
export type QuotaChange = { [K in keyof HubQuotas]?: number | null };

export function changedQuotas(current: HubQuotaOverrides | null | undefined, change: QuotaChange): HubQuotaOverrides {
  const next: HubQuotaOverrides = { ...current };
  for (const key of ['shares', 'tcpPorts'] as const) {
    const value = change[key];
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next;
}

/**
 * Room for one more share (a TCP one when `tcp`) in the hub, inside the transaction that creates it (429 else). The
 * hub's row is locked first (FOR NO KEY UPDATE: other creates of the hub wait, inserts that only reference the hub do
 * not), so two creates at the same instant cannot both take the last place, and the count is of committed shares.
 */
export async function reserveShareQuota(hubId: string, tcp: boolean, transaction: Transaction): Promise<void> {
  const hub = await Hub.findByPk(hubId, { transaction, lock: transaction.LOCK.NO_KEY_UPDATE, attributes: ['id', 'quotas'] });
  if (!hub) throw notFound('hub', hubId);
  const quotas = hubQuotas(hub.quotas);
  const [held] = await Hub.sequelize!.query<{ shares: number; tcp: number }>(
    `SELECT count(*)::int AS shares, count(tcp_port)::int AS tcp FROM shares WHERE hub_id = :hubId`,
    { replacements: { hubId }, type: QueryTypes.SELECT, transaction },
  );
  if (held.shares >= quotas.shares) {
    throw quotaExceeded(
      `this hub has ${held.shares} shares, the most its quota allows (quotas.shares: ${quotas.shares}); delete a share first, or ask the operator to raise the hub's quota`,
    );
  }
  if (tcp && held.tcp >= quotas.tcpPorts) {
    throw quotaExceeded(
      `this hub has ${held.tcp} TCP shares, the most its quota allows (quotas.tcpPorts: ${quotas.tcpPorts}); delete a TCP share first, or ask the operator to raise the hub's quota`,
    );
  }
}
