import { Op, Transaction } from 'sequelize';
import { config } from '../../shared/config.js';
import { withTransaction } from '../../shared/db.js';
import { badRequest, notFound, refusal } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { enqueue } from '../jobs/enqueue.js';
import type { Execution } from '../models/Execution.js';
import type { Hub } from '../models/Hub.js';
import { IpsecShare } from '../models/IpsecShare.js';
import { IpsecTunnel } from '../models/IpsecTunnel.js';
import { parseIpv4, subnetAddressProblem, vpcCidr } from '../../shared/ipsec/addresses.js';
import { ipsecProvider, type ProvisionedTunnel, type TunnelStatus } from '../../shared/providers/ipsec.js';
import { decryptSecret, encryptSecret } from '../../shared/secrets.js';
import { brokenConstraint, listWhere, StateMachine } from './ipsecStates.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

export const TUNNEL_JOBS = { provision: 'ipsec.provisionTunnel', teardown: 'ipsec.teardownTunnel' } as const;
const TUNNEL_RESOURCE = 'ipsecTunnel';

/**
 * The IPsec tunnel's state machine. The public API leaves the way out of ERROR open; here an ERROR tunnel may be deleted (its
 * partial allocations are torn down), and a failed teardown also ends in ERROR so it can be retried by deleting.
 */
const tunnelStates = new StateMachine('IPsec tunnel', IpsecTunnel, {
  provisioned: { from: ['NEW'], to: 'DEPLOYED', action: 'complete provisioning' },
  provisioningFailed: { from: ['NEW'], to: 'ERROR', action: 'fail provisioning' },
  teardownFailed: { from: ['DELETING'], to: 'ERROR', action: 'fail teardown' },
  delete: { from: ['DEPLOYED', 'ERROR'], to: 'DELETING', action: 'delete' },
  tornDown: { from: ['DELETING'], to: 'DELETED', action: 'complete teardown' },
});

interface CreateTunnelInput {
  name: string;
  peerPublicIp: string;
  peerCidr: string;
  locationId?: string | null;
  nlbPrivateIp?: string | null;
}

export interface Accepted<T> {
  resource: T;
  execution: Execution;
}

const where = (location: string | null) => (location === null ? 'without a location' : `at location '${location}'`);

/** NEW tunnel + its provisioning execution, in one transaction (202). */
export async function createTunnel(hub: Pick<Hub, 'id'>, input: CreateTunnelInput, createdBy: string): Promise<Accepted<IpsecTunnel>> {
  const locationId = input.locationId ?? null;
  const nlbPrivateIp = input.nlbPrivateIp ?? null;
  if (nlbPrivateIp !== null) await assertPinnableAddress(nlbPrivateIp);
  try {
    return await withTransaction(async (transaction) => {
      const tunnel = await IpsecTunnel.create(
        {
          id: newId(),
          hubId: hub.id,
          name: input.name,
          locationId,
          status: 'NEW',
          peerPublicIp: input.peerPublicIp,
          peerCidr: input.peerCidr,
          nlbPrivateIp,
          createdBy,
        },
        { transaction },
      );
      const execution = await enqueue({
        type: TUNNEL_JOBS.provision,
        hubId: hub.id,
        resourceType: TUNNEL_RESOURCE,
        resourceId: tunnel.id,
        payload: { tunnelId: tunnel.id, transition: { from: null, to: 'NEW' } },
        createdBy,
        transaction,
      });
      return { resource: tunnel, execution };
    });
  } catch (err) {
    if (brokenConstraint(err) === 'ipsec_tunnels_hub_location_key') {
      throw refusal('EH_TUNNEL_EXISTS', `this hub already has an IPsec tunnel ${where(locationId)}; one tunnel is allowed per hub and location`);
    }
    throw err;
  }
}

/** A pinned address must be a usable VPC address that no live tunnel holds (the provider re-checks atomically). */
async function assertPinnableAddress(ip: string): Promise<void> {
  const parsed = parseIpv4(ip);
  const problem = parsed === undefined ? 'must be an IPv4 address' : subnetAddressProblem(vpcCidr(config().vpcCidr), parsed);
  if (problem) throw badRequest(`value for property '$.nlbPrivateIp' is invalid: ${problem}`);
  const holder = await IpsecTunnel.findOne({ where: { nlbPrivateIp: ip, status: { [Op.ne]: 'DELETED' } } });
  if (holder) throw refusal('EH_ADDRESS_IN_USE', `nlbPrivateIp ${ip} is already in use by another IPsec tunnel`);
}

/** DEPLOYED|ERROR -> DELETING and a teardown execution; 400 while a live IPsec share targets the tunnel. */
export async function deleteTunnel(hub: Pick<Hub, 'id'>, id: string, createdBy: string): Promise<Accepted<IpsecTunnel>> {
  return withTransaction(async (transaction) => {
    // FOR UPDATE conflicts with the FOR SHARE a share create takes: a share cannot slip in while this decides
    const tunnel = await IpsecTunnel.findOne({ where: { id, hubId: hub.id }, lock: Transaction.LOCK.UPDATE, transaction });
    if (!tunnel) throw notFound('IPsec tunnel', id);
    tunnelStates.assert(tunnel, 'delete');
    const shares = await IpsecShare.count({ where: { ipsecTunnelId: id, status: { [Op.ne]: 'DELETED' } }, transaction });
    if (shares > 0) {
      throw refusal(
        'EH_IN_USE',
        `IPsec tunnel ${id} is still targeted by ${shares} IPsec share${shares > 1 ? 's' : ''}; delete ${shares > 1 ? 'them' : 'it'} first`,
      );
    }
    const from = tunnel.status;
    const deleting = await tunnelStates.apply(id, 'delete', { statusMessage: '' }, transaction);
    const execution = await enqueue({
      type: TUNNEL_JOBS.teardown,
      hubId: hub.id,
      resourceType: TUNNEL_RESOURCE,
      resourceId: id,
      payload: { tunnelId: id, transition: { from, to: 'DELETING' } },
      createdBy,
      transaction,
    });
    return { resource: deleting!, execution };
  });
}

function assertDeployed(tunnel: IpsecTunnel, what: string): void {
  if (tunnel.status !== 'DEPLOYED') {
    throw refusal('EH_INVALID_STATE', `IPsec tunnel ${tunnel.id} is ${tunnel.status}; the ${what} is available only when it is DEPLOYED`);
  }
}

/** The configuration of a DEPLOYED tunnel with its live status from the provider. */
export async function tunnelConfiguration(tunnel: IpsecTunnel): Promise<{ tunnel: IpsecTunnel; status: TunnelStatus }> {
  assertDeployed(tunnel, 'tunnel configuration');
  const status = (await ipsecProvider().tunnelStatus(tunnel.id)) ?? {
    state: 'unknown',
    tunnels: [{ outsideIpAddress: tunnel.outsideIpAddress ?? '', status: 'UNKNOWN', statusMessage: 'the provider reports no VPN connection' }],
  };
  return { tunnel, status };
}

/** The pre-shared key of a DEPLOYED tunnel, decrypted: for the sample configuration only. */
export function preSharedKeyFor(tunnel: IpsecTunnel): string {
  assertDeployed(tunnel, 'sample configuration');
  if (!tunnel.preSharedKeySealed) throw badRequest(`IPsec tunnel ${tunnel.id} has no pre-shared key`);
  return decryptSecret(tunnel.preSharedKeySealed);
}

export type { TunnelStatus };

// ---- called by the worker (workers/processors/ipsec.ts) ----

/** The tunnel a job is about (undefined once it is gone). */
export const tunnelForJob = async (id: string): Promise<IpsecTunnel | undefined> => (await IpsecTunnel.findByPk(id)) ?? undefined;

/** NEW -> DEPLOYED with what the provider made. Undefined when the tunnel had left NEW (nothing changes). */
export function completeTunnelProvisioning(id: string, made: ProvisionedTunnel): Promise<IpsecTunnel | undefined> {
  return tunnelStates.apply(id, 'provisioned', {
    nlbPrivateIp: made.nlbPrivateIp,
    nlbDnsName: made.nlbDnsName,
    vpnConnectionId: made.vpnConnectionId,
    outsideIpAddress: made.outsideIpAddress,
    insideCidr: made.insideCidr,
    preSharedKeySealed: encryptSecret(made.preSharedKey),
    tunnelOptions: made.tunnelOptions,
    statusMessage: '',
  });
}

export const completeTunnelTeardown = (id: string) => tunnelStates.apply(id, 'tornDown', { statusMessage: '' });

export const failTunnelProvisioning = (id: string, reason: string) => tunnelStates.apply(id, 'provisioningFailed', { statusMessage: reason.slice(0, 2000) });
export const failTunnelTeardown = (id: string, reason: string) =>
  tunnelStates.apply(id, 'teardownFailed', { statusMessage: `teardown failed: ${reason}`.slice(0, 2000) });

/** One page of the hub's tunnels matching `filters` (attribute -> any of the values). */
export const listTunnels = (hubId: string, filters: Record<string, unknown[]>, req: PageRequest): Promise<Page<IpsecTunnel>> =>
  findPage(IpsecTunnel, listWhere(hubId, filters), req);

export async function getTunnel(hubId: string, id: string): Promise<IpsecTunnel> {
  const tunnel = await IpsecTunnel.findOne({ where: { id, hubId } });
  if (!tunnel) throw notFound('IPsec tunnel', id);
  return tunnel;
}
