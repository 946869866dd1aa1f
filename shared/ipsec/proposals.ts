/**
 * strongSwan's names for the tunnel options (AWS Site-to-Site VPN's), shared by the customer gateway's sample
 * configuration (api/presenters/ipsec.ts) and the service's own responder (edge/ipsec/charon.ts), so that both
 * sides always propose the same algorithms.
 */
import { formatIpv4, parseCidr } from './addresses.js';

const STRONGSWAN_ENCRYPTION: Record<string, string> = {
  AES128: 'aes128',
  AES256: 'aes256',
  'AES128-GCM-16': 'aes128gcm16',
  'AES256-GCM-16': 'aes256gcm16',
};
const STRONGSWAN_INTEGRITY: Record<string, string> = { SHA1: 'sha1', 'SHA2-256': 'sha256', 'SHA2-384': 'sha384', 'SHA2-512': 'sha512' };
const STRONGSWAN_DH: Record<number, string> = {
  2: 'modp1024',
  5: 'modp1536',
  14: 'modp2048',
  15: 'modp3072',
  16: 'modp4096',
  17: 'modp6144',
  18: 'modp8192',
  19: 'ecp256',
  20: 'ecp384',
  21: 'ecp521',
  22: 'modp1024s160',
  23: 'modp2048s224',
  24: 'modp2048s256',
};
export const STRONGSWAN_DPD_ACTION: Record<string, string> = { clear: 'clear', restart: 'restart', none: 'none' };

const known = <K extends string | number>(map: Record<K, string>, values: K[]) => values.map((v) => map[v]).filter(Boolean);

/**
 * strongSwan proposals: AEAD (GCM) ciphers cannot share a proposal with integrity algorithms, so classic ciphers
 * and GCM ciphers get one proposal each. IKE proposals name PRFs for GCM, ESP proposals name the PFS groups.
 */
export function proposals(encryption: string[], integrity: string[], dhGroups: number[], kind: 'ike' | 'esp'): string {
  const ciphers = known(STRONGSWAN_ENCRYPTION, encryption);
  const integrities = known(STRONGSWAN_INTEGRITY, integrity);
  const groups = known(STRONGSWAN_DH, dhGroups);
  const classic = ciphers.filter((c) => !c.includes('gcm'));
  const aead = ciphers.filter((c) => c.includes('gcm'));
  const out: string[] = [];
  if (classic.length) out.push([...classic, ...integrities, ...groups].join('-'));
  if (aead.length) out.push([...aead, ...(kind === 'ike' ? integrities.map((i) => `prf${i}`) : []), ...groups].join('-'));
  return out.join(',');
}

/** The AWS side (.1) and the customer side (.2) of a /30 inside CIDR. */
export function insideAddresses(insideCidr: string): { aws: string; customer: string } {
  const parsed = parseCidr(insideCidr);
  if (typeof parsed === 'string') return { aws: '', customer: '' };
  return { aws: formatIpv4(parsed.network + 1), customer: formatIpv4(parsed.network + 2) };
}
