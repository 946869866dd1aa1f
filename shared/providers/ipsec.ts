import { config } from '../config.js';
import { LocalIpsecProvider } from './ipsecLocal.js';
import { StrongswanIpsecProvider } from './ipsecStrongswan.js';
import type { IpsecProvider } from './ipsecTypes.js';

export * from './ipsecTypes.js';

let current: IpsecProvider | undefined;

/** The IPsec provider of this process: strongSwan or simulated (HUB_IPSEC_PROVIDER), unless another was installed. */
export function ipsecProvider(): IpsecProvider {
  current ??= config().ipsec.provider === 'strongswan' ? new StrongswanIpsecProvider() : new LocalIpsecProvider();
  return current;
}

/** Installs a provider (tests wrap the local one to inject failures); undefined restores the default. */
export function setIpsecProvider(provider: IpsecProvider | undefined): void {
  current = provider;
}
