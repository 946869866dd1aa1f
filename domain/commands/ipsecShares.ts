import { Op, Transaction } from 'sequelize';
import { withTransaction } from '../../shared/db.js';
import { badRequest, notFound, refusal } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { enqueue } from '../jobs/enqueue.js';
import { Environment } from '../models/Environment.js';
import type { Hub } from '../models/Hub.js';
import { IpsecShare } from '../models/IpsecShare.js';
import { IpsecTunnel } from '../models/IpsecTunnel.js';
import type { Accepted } from './ipsecTunnels.js';
import { brokenConstraint, listWhere, StateMachine } from './ipsecStates.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

export const SHARE_JOBS = { provision: 'ipsec.provisionShare', teardown: 'ipsec.teardownShare' } as const;
const SHARE_RESOURCE = 'ipsecShare';

/**
 * The IPsec share's state machine. An update is accepted from DEPLOYED and also from ERROR (the way to retry a failed
 * share); from NEW it is refused while the share is still being provisioned. "any -> DELETING" covers every live
 * state; DELETING and DELETED refuse a second delete.
 */
const shareStates = new StateMachine('IPsec share', IpsecShare, {
  provisioned: { from: ['NEW'], to: 'DEPLOYED', action: 'complete provisioning' },
  provisioningFailed: { from: ['NEW'], to: 'ERROR', action: 'fail provisioning' },
  teardownFailed: { from: ['DELETING'], to: 'ERROR', action: 'fail teardown' },
  update: { from: ['DEPLOYED', 'ERROR'], to: 'NEW', action: 'update' },
  delete: { from: ['NEW', 'DEPLOYED', 'ERROR'], to: 'DELETING', action: 'delete' },
  tornDown: { from: ['DELETING'], to: 'DELETED', action: 'complete teardown' },
});

export interface ShareInput {
  name: string;
  ipsecTunnelId: string;
  envZId: string;
  target: string;
  ingressPort: number;
  locationId: string | null;
}

/**
 * The rules a share's values must meet, checked inside the transaction that writes them: the tunnel (locked FOR
 * SHARE so a concurrent tunnel delete waits) is this hub's and DEPLOYED, the environment is this hub's, the port
 * and the name are free. The unique indexes re-check port and name atomically.
 */
async function assertPublishable(hub: Pick<Hub, 'id'>, input: ShareInput, transaction: Transaction, selfId?: string): Promise<void> {
  const tunnel = await IpsecTunnel.findOne({ where: { id: input.ipsecTunnelId, hubId: hub.id }, lock: Transaction.LOCK.SHARE, transaction });
  if (!tunnel) throw badRequest(`value for property '$.ipsecTunnelId' is invalid: no IPsec tunnel '${input.ipsecTunnelId}' in this hub`);
  if (tunnel.status !== 'DEPLOYED') {
    throw refusal('EH_INVALID_STATE', `IPsec tunnel ${tunnel.id} is ${tunnel.status}; shares can be published only on a DEPLOYED tunnel`);
  }
  const environment = await Environment.findOne({ where: { envZId: input.envZId, hubId: hub.id }, transaction });
  if (!environment) throw badRequest(`value for property '$.envZId' is invalid: no environment '${input.envZId}' in this hub`);
  const others = selfId ? { id: { [Op.ne]: selfId } } : {};
  const portHolder = await IpsecShare.findOne({
    where: { ...others, ipsecTunnelId: tunnel.id, ingressPort: input.ingressPort, status: { [Op.ne]: 'DELETED' } },
    transaction,
  });
  if (portHolder) throw portTaken(input);
  const nameHolder = await IpsecShare.findOne({
    where: { ...others, hubId: hub.id, status: { [Op.ne]: 'DELETED' }, name: { [Op.iLike]: input.name.replace(/[\\%_]/g, '\\$&') } },
    transaction,
  });
  if (nameHolder) throw nameTaken(input);
}

const portTaken = (input: ShareInput) =>
  refusal('EH_PORT_IN_USE', `ingressPort ${input.ingressPort} is already used on IPsec tunnel ${input.ipsecTunnelId} by another IPsec share`);
const nameTaken = (input: ShareInput) => refusal('EH_NAME_TAKEN', `an IPsec share named '${input.name}' already exists in this hub`);

function translateUniqueViolation(err: unknown, input: ShareInput): never {
  const constraint = brokenConstraint(err);
  if (constraint === 'ipsec_shares_tunnel_port_key') throw portTaken(input);
  if (constraint === 'ipsec_shares_hub_name_key') throw nameTaken(input);
  throw err;
}

/** The IPsec share a job is about (undefined once it is gone). */
export const shareForJob = async (id: string): Promise<IpsecShare | undefined> => (await IpsecShare.findByPk(id)) ?? undefined;

export async function createShare(hub: Pick<Hub, 'id'>, input: ShareInput, createdBy: string): Promise<Accepted<IpsecShare>> {
  try {
    return await withTransaction(async (transaction) => {
      await assertPublishable(hub, input, transaction);
      const share = await IpsecShare.create({ id: newId(), hubId: hub.id, ...input, status: 'NEW', createdBy }, { transaction });
      const execution = await enqueue({
        type: SHARE_JOBS.provision,
        hubId: hub.id,
        resourceType: SHARE_RESOURCE,
        resourceId: share.id,
        payload: { shareId: share.id, recreate: false, transition: { from: null, to: 'NEW' } },
        createdBy,
        transaction,
      });
      return { resource: share, execution };
    });
  } catch (err) {
    translateUniqueViolation(err, input);
  }
}

/** PUT (all fields) and PATCH (changed fields, merged here): DEPLOYED|ERROR -> NEW, then re-provisioned. */
export async function updateShare(hub: Pick<Hub, 'id'>, id: string, changes: Partial<ShareInput>, createdBy: string): Promise<Accepted<IpsecShare>> {
  let merged: ShareInput | undefined;
  try {
    return await withTransaction(async (transaction) => {
      const share = await IpsecShare.findOne({ where: { id, hubId: hub.id }, lock: Transaction.LOCK.UPDATE, transaction });
      if (!share) throw notFound('IPsec share', id);
      shareStates.assert(share, 'update');
      merged = {
        name: changes.name ?? share.name,
        ipsecTunnelId: changes.ipsecTunnelId ?? share.ipsecTunnelId,
        envZId: changes.envZId ?? share.envZId,
        target: changes.target ?? share.target,
        ingressPort: changes.ingressPort ?? share.ingressPort,
        locationId: changes.locationId === undefined ? share.locationId : changes.locationId,
      };
      await assertPublishable(hub, merged, transaction, id);
      const from = share.status;
      const updated = await shareStates.apply(id, 'update', { ...merged, statusMessage: '' }, transaction);
      const execution = await enqueue({
        type: SHARE_JOBS.provision,
        hubId: hub.id,
        resourceType: SHARE_RESOURCE,
        resourceId: id,
        payload: { shareId: id, recreate: true, transition: { from, to: 'NEW' } },
        createdBy,
        transaction,
      });
      return { resource: updated!, execution };
    });
  } catch (err) {
    if (merged) translateUniqueViolation(err, merged);
    throw err;
  }
}

/** Any live state -> DELETING, then the teardown execution makes it DELETED. */
export async function deleteShare(hub: Pick<Hub, 'id'>, id: string, createdBy: string): Promise<Accepted<IpsecShare>> {
  return withTransaction(async (transaction) => {
    const share = await IpsecShare.findOne({ where: { id, hubId: hub.id }, lock: Transaction.LOCK.UPDATE, transaction });
    if (!share) throw notFound('IPsec share', id);
    shareStates.assert(share, 'delete');
    const from = share.status;
    const deleting = await shareStates.apply(id, 'delete', { statusMessage: '' }, transaction);
    const execution = await enqueue({
      type: SHARE_JOBS.teardown,
      hubId: hub.id,
      resourceType: SHARE_RESOURCE,
      resourceId: id,
      payload: { shareId: id, transition: { from, to: 'DELETING' } },
      createdBy,
      transaction,
    });
    return { resource: deleting!, execution };
  });
}

// ---- called by the worker (workers/processors/ipsec.ts) ----

export const completeShareProvisioning = (id: string) => shareStates.apply(id, 'provisioned', { statusMessage: '' });
export const completeShareTeardown = (id: string) => shareStates.apply(id, 'tornDown', { statusMessage: '' });
export const failShareProvisioning = (id: string, reason: string) => shareStates.apply(id, 'provisioningFailed', { statusMessage: reason.slice(0, 2000) });
export const failShareTeardown = (id: string, reason: string) =>
  shareStates.apply(id, 'teardownFailed', { statusMessage: `teardown failed: ${reason}`.slice(0, 2000) });

/** One page of the hub's IPsec shares matching `filters` (attribute -> any of the values). */
export const listIpsecShares = (hubId: string, filters: Record<string, unknown[]>, req: PageRequest): Promise<Page<IpsecShare>> =>
  findPage(IpsecShare, listWhere(hubId, filters), req);

export async function getIpsecShare(hubId: string, id: string): Promise<IpsecShare> {
  const share = await IpsecShare.findOne({ where: { id, hubId } });
  if (!share) throw notFound('IPsec share', id);
  return share;
}
