/** Where charon can run: as root, with strongSwan's charon and swanctl installed (Debian's paths). */
import { existsSync } from 'node:fs';

export const CHARON_PATH = '/usr/lib/ipsec/charon';
export const SWANCTL_PATH = '/usr/sbin/swanctl';

/** Whether this process can run strongSwan (HUB_IPSEC_PROVIDER's default: `strongswan` when it can). */
export function strongswanRuns(): boolean {
  return process.getuid?.() === 0 && existsSync(CHARON_PATH) && existsSync(SWANCTL_PATH);
}
