import type { IpsecShare } from '../../domain/models/IpsecShare.js';
import type { IpsecTunnel, TunnelOptions } from '../../domain/models/IpsecTunnel.js';
import { insideAddresses, proposals, STRONGSWAN_DPD_ACTION } from '../../shared/ipsec/proposals.js';
import type { TunnelStatus } from '../../domain/commands/ipsecTunnels.js';
import { iso } from './platform.js';

/** An IPsec tunnel as the API shows it. Provisioned fields are '' until DEPLOYED; the pre-shared key never appears. */
export const presentTunnel = (t: IpsecTunnel) => ({
  id: t.id,
  name: t.name,
  hubId: t.hubId,
  locationId: t.locationId,
  status: t.status,
  statusMessage: t.statusMessage,
  peerPublicIp: t.peerPublicIp,
  peerCidr: t.peerCidr,
  nlbPrivateIp: t.nlbPrivateIp ?? '',
  nlbDnsName: t.nlbDnsName,
  vpnConnectionId: t.vpnConnectionId,
  createdAt: iso(t.createdAt),
  createdBy: t.createdBy,
  updatedAt: iso(t.updatedAt),
});

export const presentShare = (s: IpsecShare) => ({
  id: s.id,
  name: s.name,
  hubId: s.hubId,
  ipsecTunnelId: s.ipsecTunnelId,
  envZId: s.envZId,
  target: s.target,
  ingressPort: s.ingressPort,
  locationId: s.locationId,
  status: s.status,
  statusMessage: s.statusMessage,
  createdAt: iso(s.createdAt),
  createdBy: s.createdBy,
  updatedAt: iso(s.updatedAt),
});

/** The tunnel configuration: `state` and a single-element `tunnels` array. */
export function presentTunnelConfig(tunnel: IpsecTunnel, status: TunnelStatus) {
  const options = tunnel.tunnelOptions as TunnelOptions;
  const live = status.tunnels[0];
  return {
    state: status.state,
    tunnels: [
      {
        outsideIpAddress: tunnel.outsideIpAddress ?? live?.outsideIpAddress ?? '',
        status: live?.status ?? 'UNKNOWN',
        statusMessage: live?.statusMessage ?? '',
        insideCidr: tunnel.insideCidr ?? '',
        ikeVersions: options.ikeVersions,
        phase1EncryptionAlgorithms: options.phase1EncryptionAlgorithms,
        phase1IntegrityAlgorithms: options.phase1IntegrityAlgorithms,
        phase1DHGroupNumbers: options.phase1DHGroupNumbers,
        phase1LifetimeSeconds: options.phase1LifetimeSeconds,
        phase2EncryptionAlgorithms: options.phase2EncryptionAlgorithms,
        phase2IntegrityAlgorithms: options.phase2IntegrityAlgorithms,
        phase2DHGroupNumbers: options.phase2DHGroupNumbers,
        phase2LifetimeSeconds: options.phase2LifetimeSeconds,
        rekeyMarginTimeSeconds: options.rekeyMarginTimeSeconds,
        rekeyFuzzPercentage: options.rekeyFuzzPercentage,
        dpdTimeoutSeconds: options.dpdTimeoutSeconds,
        dpdTimeoutAction: options.dpdTimeoutAction,
      },
    ],
  };
}

// ---- strongSwan sample configuration ----

/**
 * A strongSwan (swanctl.conf) configuration for the customer gateway, with the pre-shared key in its secrets
 * section: this is the only place the key is ever shown.
 */
export function strongswanSampleConfig(tunnel: IpsecTunnel, preSharedKey: string, vpcCidr: string): string {
  const o = tunnel.tunnelOptions as TunnelOptions;
  const inside = insideAddresses(tunnel.insideCidr ?? '');
  const version = o.ikeVersions.length === 1 ? o.ikeVersions[0].replace('ikev', '') : '0';
  const margin = o.rekeyMarginTimeSeconds;
  const rand = Math.round((margin * o.rekeyFuzzPercentage) / 100);
  const name = `edgehub-${tunnel.vpnConnectionId}`;
  return [
    `# strongSwan sample configuration for edgehub IPsec tunnel ${tunnel.id} (${tunnel.name})`,
    `# VPN connection ${tunnel.vpnConnectionId}; load balancer ${tunnel.nlbDnsName} (${tunnel.nlbPrivateIp})`,
    '#',
    '# Save as /etc/swanctl/conf.d/edgehub.conf on the customer gateway, then run: swanctl --load-all',
    `# Tunnel interface addresses (inside CIDR ${tunnel.insideCidr}): customer gateway ${inside.customer}, edgehub ${inside.aws}`,
    '# This file contains the pre-shared key: keep it secret.',
    '',
    'connections {',
    `  ${name} {`,
    `    version = ${version}`,
    `    local_addrs = ${tunnel.peerPublicIp}`,
    `    remote_addrs = ${tunnel.outsideIpAddress}`,
    `    proposals = ${proposals(o.phase1EncryptionAlgorithms, o.phase1IntegrityAlgorithms, o.phase1DHGroupNumbers, 'ike')}`,
    `    rekey_time = ${o.phase1LifetimeSeconds - margin}s`,
    `    over_time = ${margin}s`,
    `    rand_time = ${rand}s`,
    '    dpd_delay = 10s',
    `    dpd_timeout = ${o.dpdTimeoutSeconds}s`,
    '    local {',
    '      auth = psk',
    `      id = ${tunnel.peerPublicIp}`,
    '    }',
    '    remote {',
    '      auth = psk',
    `      id = ${tunnel.outsideIpAddress}`,
    '    }',
    '    children {',
    `      ${name}-child {`,
    `        local_ts = ${tunnel.peerCidr}`,
    `        remote_ts = ${vpcCidr}`,
    `        esp_proposals = ${proposals(o.phase2EncryptionAlgorithms, o.phase2IntegrityAlgorithms, o.phase2DHGroupNumbers, 'esp')}`,
    `        life_time = ${o.phase2LifetimeSeconds}s`,
    `        rekey_time = ${o.phase2LifetimeSeconds - margin}s`,
    `        rand_time = ${rand}s`,
    `        dpd_action = ${STRONGSWAN_DPD_ACTION[o.dpdTimeoutAction] ?? 'clear'}`,
    '        start_action = start',
    '      }',
    '    }',
    '  }',
    '}',
    '',
    'secrets {',
    `  ike-${name} {`,
    `    id-1 = ${tunnel.peerPublicIp}`,
    `    id-2 = ${tunnel.outsideIpAddress}`,
    `    secret = "${preSharedKey}"`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/** Vendor-neutral settings, in the style of AWS's "Generic" download, for devices without a template here. */
function genericSampleConfig(tunnel: IpsecTunnel, preSharedKey: string, vpcCidr: string): string {
  const o = tunnel.tunnelOptions as TunnelOptions;
  const inside = insideAddresses(tunnel.insideCidr ?? '');
  return [
    `# Generic IPsec settings for edgehub IPsec tunnel ${tunnel.id} (${tunnel.name}), VPN connection ${tunnel.vpnConnectionId}`,
    '# This file contains the pre-shared key: keep it secret.',
    '',
    '[IKE / phase 1]',
    `Authentication method     : pre-shared key`,
    `Pre-shared key            : ${preSharedKey}`,
    `IKE versions              : ${o.ikeVersions.join(', ')}`,
    `Encryption algorithms     : ${o.phase1EncryptionAlgorithms.join(', ')}`,
    `Integrity algorithms      : ${o.phase1IntegrityAlgorithms.join(', ')}`,
    `Diffie-Hellman groups     : ${o.phase1DHGroupNumbers.join(', ')}`,
    `Lifetime                  : ${o.phase1LifetimeSeconds} seconds`,
    '',
    '[IPsec / phase 2]',
    `Protocol                  : ESP, tunnel mode`,
    `Encryption algorithms     : ${o.phase2EncryptionAlgorithms.join(', ')}`,
    `Integrity algorithms      : ${o.phase2IntegrityAlgorithms.join(', ')}`,
    `PFS Diffie-Hellman groups : ${o.phase2DHGroupNumbers.join(', ')}`,
    `Lifetime                  : ${o.phase2LifetimeSeconds} seconds`,
    `Rekey margin              : ${o.rekeyMarginTimeSeconds} seconds, fuzz ${o.rekeyFuzzPercentage}%`,
    `Dead peer detection       : timeout ${o.dpdTimeoutSeconds} seconds, action ${o.dpdTimeoutAction}`,
    '',
    '[Addresses]',
    `Customer gateway (outside): ${tunnel.peerPublicIp}`,
    `edgehub endpoint (outside): ${tunnel.outsideIpAddress}`,
    `Inside tunnel CIDR        : ${tunnel.insideCidr} (customer gateway ${inside.customer}, edgehub ${inside.aws})`,
    `Customer network          : ${tunnel.peerCidr}`,
    `edgehub network           : ${vpcCidr} (load balancer ${tunnel.nlbPrivateIp}, ${tunnel.nlbDnsName})`,
    '',
  ].join('\n');
}

/** The vendors `sample-config?vendor=` can render; the first is the default. */
export const SAMPLE_CONFIG_VENDORS = { strongswan: strongswanSampleConfig, generic: genericSampleConfig } as const;
