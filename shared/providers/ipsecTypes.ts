import type { TunnelOptions } from '../ipsec/options.js';

/** What the provider needs to build a tunnel; `name` tags the cloud resources. */
export interface TunnelSpec {
  tunnelId: string;
  hubId: string;
  name: string;
  locationId: string | null;
  peerPublicIp: string;
  peerCidr: string;
  /** A pinned load balancer address, or null to have a free one chosen. */
  nlbPrivateIp: string | null;
}

export interface ProvisionedTunnel {
  nlbPrivateIp: string;
  nlbDnsName: string;
  vpnConnectionId: string;
  outsideIpAddress: string;
  insideCidr: string;
  /** Plain text: the caller seals it before storing it. */
  preSharedKey: string;
  tunnelOptions: TunnelOptions;
}

/** The live state of a VPN connection (AWS: VpnConnection.State and its VgwTelemetry). */
export interface TunnelStatus {
  state: string;
  tunnels: { outsideIpAddress: string; status: string; statusMessage: string }[];
}

export interface ShareSpec {
  shareId: string;
  hubId: string;
  name: string;
  tunnelId: string;
  envZId: string;
  target: string;
  ingressPort: number;
}

export interface ProvisionedShare {
  listenerId: string;
}

/**
 * The cloud side of IPsec: a network load balancer plus a site-to-site VPN connection per tunnel, a listener per
 * share. Every call is idempotent by resource id: repeating one (a retried or recovered job) returns what the first
 * call made instead of allocating again.
 */
export interface IpsecProvider {
  provisionTunnel(spec: TunnelSpec): Promise<ProvisionedTunnel>;
  teardownTunnel(tunnelId: string): Promise<void>;
  provisionShare(spec: ShareSpec): Promise<ProvisionedShare>;
  teardownShare(shareId: string): Promise<void>;
  /** Releases what the provider holds for tunnels whose records are gone (their hub was deleted); no waiting. */
  releaseTunnels(tunnelIds: string[]): Promise<void>;
  /** Undefined when the provider holds no live VPN connection for the tunnel. */
  tunnelStatus(tunnelId: string): Promise<TunnelStatus | undefined>;
}

/** A provider refusal. `permanent` ones (bad input, address taken) are not retried. */
export class IpsecProviderError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'IpsecProviderError';
  }
}

/** AWS Site-to-Site VPN's default tunnel options. */
export const DEFAULT_TUNNEL_OPTIONS: TunnelOptions = {
  ikeVersions: ['ikev1', 'ikev2'],
  phase1EncryptionAlgorithms: ['AES128', 'AES256', 'AES128-GCM-16', 'AES256-GCM-16'],
  phase1IntegrityAlgorithms: ['SHA1', 'SHA2-256', 'SHA2-384', 'SHA2-512'],
  phase1DHGroupNumbers: [2, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24],
  phase1LifetimeSeconds: 28800,
  phase2EncryptionAlgorithms: ['AES128', 'AES256', 'AES128-GCM-16', 'AES256-GCM-16'],
  phase2IntegrityAlgorithms: ['SHA1', 'SHA2-256', 'SHA2-384', 'SHA2-512'],
  phase2DHGroupNumbers: [2, 5, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24],
  phase2LifetimeSeconds: 3600,
  rekeyMarginTimeSeconds: 270,
  rekeyFuzzPercentage: 100,
  dpdTimeoutSeconds: 30,
  dpdTimeoutAction: 'clear',
};
