import { z } from 'zod';
import {
  completeShareProvisioning,
  completeShareTeardown,
  failShareProvisioning,
  failShareTeardown,
  SHARE_JOBS,
  shareForJob,
} from '../../domain/commands/ipsecShares.js';
import {
  completeTunnelProvisioning,
  completeTunnelTeardown,
  failTunnelProvisioning,
  failTunnelTeardown,
  TUNNEL_JOBS,
  tunnelForJob,
} from '../../domain/commands/ipsecTunnels.js';
import { ipsecProvider, IpsecProviderError } from '../../shared/providers/ipsec.js';
import { defineProcessor, permanentFailure, type JobContext } from '../processor.js';

/**
 * IPsec jobs. Each one re-reads its resource, does nothing unless the resource is still in the state the job was
 * made for, calls the provider (idempotent by resource id), and moves the resource with a conditional transition:
 * a retried or recovered job therefore converges on one result and never allocates twice.
 */

const idOf = (ctx: JobContext, key: 'tunnelId' | 'shareId') => {
  const id = ctx.payload[key];
  if (typeof id !== 'string') throw permanentFailure(`job payload lacks ${key}`);
  return id;
};

/** A permanent provider refusal fails the execution at once; anything else is retried with backoff. */
async function provider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof IpsecProviderError && err.permanent) throw permanentFailure(err.message);
    throw err;
  }
}

/** What the tunnel and share commands enqueue: the resource's id and the transition the job completes. */
const transition = z.object({ from: z.string().max(40).nullable(), to: z.string().max(40) }).strict();
const tunnelPayload = z.object({ tunnelId: z.string().min(1).max(200), transition }).strict();
const sharePayload = z.object({ shareId: z.string().min(1).max(200), recreate: z.boolean().optional(), transition }).strict();

const skipped = (what: string, status: string) => ({ skipped: `${what} is ${status}` });

export default [
  defineProcessor({
    type: TUNNEL_JOBS.provision,
    payload: tunnelPayload,
    async handle(ctx) {
      const tunnel = await tunnelForJob(idOf(ctx, 'tunnelId'));
      if (!tunnel) return { skipped: 'IPsec tunnel is gone' };
      if (tunnel.status !== 'NEW') return skipped('IPsec tunnel', tunnel.status);
      const made = await provider(() =>
        ipsecProvider().provisionTunnel({
          tunnelId: tunnel.id,
          hubId: tunnel.hubId,
          name: tunnel.name,
          locationId: tunnel.locationId,
          peerPublicIp: tunnel.peerPublicIp,
          peerCidr: tunnel.peerCidr,
          nlbPrivateIp: tunnel.nlbPrivateIp,
        }),
      );
      const deployed = await completeTunnelProvisioning(tunnel.id, made);
      if (!deployed) return skipped('IPsec tunnel', (await tunnelForJob(tunnel.id))?.status ?? 'gone');
      ctx.log.info({ tunnelId: tunnel.id, vpnConnectionId: made.vpnConnectionId }, 'IPsec tunnel deployed');
      return { transition: { from: 'NEW', to: 'DEPLOYED' }, vpnConnectionId: made.vpnConnectionId, nlbPrivateIp: made.nlbPrivateIp };
    },
    async onFinalFailure(ctx, err) {
      await failTunnelProvisioning(idOf(ctx, 'tunnelId'), err.message);
    },
  }),

  defineProcessor({
    type: TUNNEL_JOBS.teardown,
    payload: tunnelPayload,
    async handle(ctx) {
      const tunnel = await tunnelForJob(idOf(ctx, 'tunnelId'));
      if (!tunnel) return { skipped: 'IPsec tunnel is gone' };
      if (tunnel.status !== 'DELETING') return skipped('IPsec tunnel', tunnel.status);
      await provider(() => ipsecProvider().teardownTunnel(tunnel.id));
      const deleted = await completeTunnelTeardown(tunnel.id);
      if (!deleted) return skipped('IPsec tunnel', (await tunnelForJob(tunnel.id))?.status ?? 'gone');
      return { transition: { from: 'DELETING', to: 'DELETED' } };
    },
    async onFinalFailure(ctx, err) {
      await failTunnelTeardown(idOf(ctx, 'tunnelId'), err.message);
    },
  }),

  defineProcessor({
    type: SHARE_JOBS.provision,
    payload: sharePayload,
    async handle(ctx) {
      const share = await shareForJob(idOf(ctx, 'shareId'));
      if (!share) return { skipped: 'IPsec share is gone' };
      if (share.status !== 'NEW') return skipped('IPsec share', share.status);
      const cloud = ipsecProvider();
      // an update recreates the share: the old listener goes before the new one is made
      if (ctx.payload.recreate === true) await provider(() => cloud.teardownShare(share.id));
      const made = await provider(() =>
        cloud.provisionShare({
          shareId: share.id,
          hubId: share.hubId,
          name: share.name,
          tunnelId: share.ipsecTunnelId,
          envZId: share.envZId,
          target: share.target,
          ingressPort: share.ingressPort,
        }),
      );
      const deployed = await completeShareProvisioning(share.id);
      if (!deployed) {
        // deleted while this job worked: the teardown may have run before our listener existed, so undo it here
        await provider(() => cloud.teardownShare(share.id));
        return skipped('IPsec share', (await shareForJob(share.id))?.status ?? 'gone');
      }
      return { transition: { from: 'NEW', to: 'DEPLOYED' }, listenerId: made.listenerId };
    },
    async onFinalFailure(ctx, err) {
      await failShareProvisioning(idOf(ctx, 'shareId'), err.message);
    },
  }),

  defineProcessor({
    type: SHARE_JOBS.teardown,
    payload: sharePayload,
    async handle(ctx) {
      const share = await shareForJob(idOf(ctx, 'shareId'));
      if (!share) return { skipped: 'IPsec share is gone' };
      if (share.status !== 'DELETING') return skipped('IPsec share', share.status);
      await provider(() => ipsecProvider().teardownShare(share.id));
      const deleted = await completeShareTeardown(share.id);
      if (!deleted) return skipped('IPsec share', (await shareForJob(share.id))?.status ?? 'gone');
      return { transition: { from: 'DELETING', to: 'DELETED' } };
    },
    async onFinalFailure(ctx, err) {
      await failShareTeardown(idOf(ctx, 'shareId'), err.message);
    },
  }),
];
