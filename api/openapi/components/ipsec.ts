/** IPsec tunnels, their shares and configuration. */
import { z } from 'zod';
import { id, nullableTimestamp, obj } from './base.js';

export const IpsecTunnel = obj({
  id,
  name: z.string(),
  hubId: id,
  locationId: z.string().nullable(),
  status: z.string(),
  statusMessage: z.string().nullable(),
  peerPublicIp: z.string(),
  peerCidr: z.string(),
  nlbPrivateIp: z.string(),
  nlbDnsName: z.string().nullable(),
  vpnConnectionId: z.string().nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'IpsecTunnel', description: 'Provisioned fields are empty until DEPLOYED; the pre-shared key never appears.' });

export const IpsecShare = obj({
  id,
  name: z.string(),
  hubId: id,
  ipsecTunnelId: id,
  envZId: id,
  target: z.string(),
  ingressPort: z.number().int(),
  locationId: z.string().nullable(),
  status: z.string(),
  statusMessage: z.string().nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'IpsecShare' });

export const TunnelConfig = obj({
  state: z.string(),
  tunnels: z.array(
    obj({
      outsideIpAddress: z.string(),
      status: z.string(),
      statusMessage: z.string(),
      insideCidr: z.string(),
      ikeVersions: z.array(z.string()),
      phase1EncryptionAlgorithms: z.array(z.string()),
      phase1IntegrityAlgorithms: z.array(z.string()),
      phase1DHGroupNumbers: z.array(z.number()),
      phase1LifetimeSeconds: z.number(),
      phase2EncryptionAlgorithms: z.array(z.string()),
      phase2IntegrityAlgorithms: z.array(z.string()),
      phase2DHGroupNumbers: z.array(z.number()),
      phase2LifetimeSeconds: z.number(),
      rekeyMarginTimeSeconds: z.number(),
      rekeyFuzzPercentage: z.number(),
      dpdTimeoutSeconds: z.number(),
      dpdTimeoutAction: z.string(),
    }),
  ),
}).meta({ id: 'TunnelConfig' });
