/** Tunnel options as AWS Site-to-Site VPN names them (the tunnel-config fields). */
export interface TunnelOptions {
  ikeVersions: string[];
  phase1EncryptionAlgorithms: string[];
  phase1IntegrityAlgorithms: string[];
  phase1DHGroupNumbers: number[];
  phase1LifetimeSeconds: number;
  phase2EncryptionAlgorithms: string[];
  phase2IntegrityAlgorithms: string[];
  phase2DHGroupNumbers: number[];
  phase2LifetimeSeconds: number;
  rekeyMarginTimeSeconds: number;
  rekeyFuzzPercentage: number;
  dpdTimeoutSeconds: number;
  dpdTimeoutAction: string;
}
