/**
 * A customer's own strongSwan for the IPsec tests and bench:ipsec: charon in the network namespace `ns`, with a
 * private /run (a mount namespace of its own, so that it does not meet the service's charons there), its
 * configuration, VICI socket and log in `dir`. The caller loads its connections over `vici` and stops `child`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CHARON_PATH } from '../../shared/ipsec/strongswan.js';

const PLUGINS = 'random nonce kdf aes sha1 sha2 hmac gcm pem pkcs1 x509 pubkey openssl kernel-libipsec kernel-netlink socket-default vici updown';

export function spawnPeerCharon(ns: string, dir: string): { child: ChildProcess; vici: string } {
  const vici = `unix://${path.join(dir, 'peer.vici')}`;
  const conf = path.join(dir, 'peer.conf');
  const log = path.join(dir, 'peer.log');
  writeFileSync(
    conf,
    `charon {\n  load = ${PLUGINS}\n  filelog {\n    log {\n      path = ${log}\n      default = 1\n      flush_line = yes\n    }\n  }\n  plugins {\n    vici {\n      socket = ${vici}\n    }\n  }\n}\n`,
  );
  const child = spawn('ip', ['netns', 'exec', ns, 'unshare', '-m', 'sh', '-c', `mount -t tmpfs none /run && STRONGSWAN_CONF=${conf} exec ${CHARON_PATH}`], {
    stdio: 'ignore',
  });
  return { child, vici };
}
