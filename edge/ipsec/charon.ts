/**
 * One charon per tunnel, in the tunnel's namespace (edge/ipsec/netns.ts), driven through swanctl over its VICI
 * socket: never a global file under /etc. Each charon gets a private /run (its pid files would collide) and a
 * folder of its own (strongswan.conf, swanctl.conf with the pre-shared key, mode 0600, the VICI socket, its log).
 * A charon that exits is started again and its connection loaded again.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { backoffMs } from '../../shared/backoff.js';
import { CHARON_PATH, SWANCTL_PATH } from '../../shared/ipsec/strongswan.js';
import { logger } from '../../shared/logger.js';
import type { TunnelOptions } from '../../shared/ipsec/options.js';
import { proposals, STRONGSWAN_DPD_ACTION } from '../../shared/ipsec/proposals.js';

const run = promisify(execFile);

/** ESP in user space over a TUN device (kernel-libipsec): no kernel ESP module is needed. */
const PLUGINS = 'random nonce kdf aes sha1 sha2 hmac gcm pem pkcs1 x509 pubkey openssl kernel-libipsec kernel-netlink socket-default vici updown';

export interface ResponderSpec {
  vpnConnectionId: string;
  outside: string;
  peerPublicIp: string;
  peerCidr: string;
  vpcCidr: string;
  preSharedKey: string;
  options: TunnelOptions;
}

/** The connection name charon knows the tunnel by (the customer's sample configuration uses the same). */
export const connectionName = (vpnConnectionId: string) => `edgehub-${vpnConnectionId}`;

/** The responder's side of the customer gateway's sample configuration (api/presenters/ipsec.ts), mirrored. */
export function responderConfig(s: ResponderSpec): string {
  const o = s.options;
  const version = o.ikeVersions.length === 1 ? o.ikeVersions[0].replace('ikev', '') : '0';
  const margin = o.rekeyMarginTimeSeconds;
  const rand = Math.round((margin * o.rekeyFuzzPercentage) / 100);
  const name = connectionName(s.vpnConnectionId);
  const quoted = s.preSharedKey.replace(/["\\]/g, '');
  return `connections {
  ${name} {
    version = ${version}
    local_addrs = ${s.outside}
    remote_addrs = ${s.peerPublicIp}
    proposals = ${proposals(o.phase1EncryptionAlgorithms, o.phase1IntegrityAlgorithms, o.phase1DHGroupNumbers, 'ike')}
    rekey_time = ${o.phase1LifetimeSeconds - margin}s
    over_time = ${margin}s
    rand_time = ${rand}s
    dpd_delay = 10s
    dpd_timeout = ${o.dpdTimeoutSeconds}s
    local {
      auth = psk
      id = ${s.outside}
    }
    remote {
      auth = psk
      id = ${s.peerPublicIp}
    }
    children {
      ${name}-child {
        local_ts = ${s.vpcCidr}
        remote_ts = ${s.peerCidr}
        esp_proposals = ${proposals(o.phase2EncryptionAlgorithms, o.phase2IntegrityAlgorithms, o.phase2DHGroupNumbers, 'esp')}
        life_time = ${o.phase2LifetimeSeconds}s
        rekey_time = ${o.phase2LifetimeSeconds - margin}s
        rand_time = ${rand}s
        dpd_action = ${STRONGSWAN_DPD_ACTION[o.dpdTimeoutAction] ?? 'clear'}
      }
    }
  }
}
secrets {
  ike-${name} {
    id-1 = ${s.outside}
    id-2 = ${s.peerPublicIp}
    secret = "${quoted}"
  }
}
`;
}

/** What charon reports of a connection's security associations. */
export interface SaReport {
  status: 'UP' | 'DOWN';
  message: string;
}

/** Reads `swanctl --list-sas --raw` output for one connection. */
function saReport(raw: string, name: string): SaReport {
  const at = raw.indexOf(`${name} {`);
  if (at < 0) return { status: 'DOWN', message: 'no IKE_SA with the customer gateway' };
  const ike = /state=(\w+)/.exec(raw.slice(at))?.[1] ?? 'UNKNOWN';
  const child = /child-sas \{[^]*?state=(\w+)/.exec(raw.slice(at));
  const bytesIn = /bytes-in=(\d+)/.exec(raw.slice(at))?.[1];
  const bytesOut = /bytes-out=(\d+)/.exec(raw.slice(at))?.[1];
  if (child?.[1] === 'INSTALLED') return { status: 'UP', message: `IKE_SA ${ike}, CHILD_SA INSTALLED (bytes in ${bytesIn ?? 0}, out ${bytesOut ?? 0})` };
  return { status: 'DOWN', message: `IKE_SA ${ike}, no CHILD_SA installed` };
}

export class Charon {
  private child: ChildProcess | undefined;
  private stopped = false;
  private readonly vici: string;
  private readonly swanctlConf: string;
  /** Called after charon (re)started and loaded the connection. */
  onLoaded: () => void = () => undefined;

  constructor(
    private readonly ns: string,
    private readonly dir: string,
    private readonly config: string,
  ) {
    this.vici = path.join(dir, 'charon.vici');
    this.swanctlConf = path.join(dir, 'swanctl.conf');
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts charon and loads the connection; resolves once charon holds it. */
  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(
      path.join(this.dir, 'strongswan.conf'),
      `charon {\n  load = ${PLUGINS}\n  install_virtual_ip = no\n  filelog {\n    log {\n      path = ${path.join(this.dir, 'charon.log')}\n      default = 1\n      flush_line = yes\n    }\n  }\n  syslog {\n    daemon {\n      default = -1\n    }\n  }\n  plugins {\n    vici {\n      socket = unix://${this.vici}\n    }\n  }\n}\n`,
    );
    writeFileSync(this.swanctlConf, this.config, { mode: 0o600 });
    await this.spawnAndLoad();
  }

  private async spawnAndLoad(): Promise<void> {
    rmSync(this.vici, { force: true });
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.ns,
        'unshare',
        '-m',
        'sh',
        '-c',
        `mount -t tmpfs none /run && STRONGSWAN_CONF=${path.join(this.dir, 'strongswan.conf')} exec ${CHARON_PATH}`,
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    child.once('exit', (code, signal) => {
      if (this.stopped || this.child !== child) return;
      logger.warn({ ns: this.ns, code, signal }, 'ipsec: charon exited; starting it again');
      this.restart();
    });
    for (let i = 0; !existsSync(this.vici); i++) {
      if (child.exitCode !== null || i > 200) throw new Error(`charon in ${this.ns} did not start (see ${path.join(this.dir, 'charon.log')})`);
      await sleep(50);
    }
    await this.swanctl(['--load-all', '--file', this.swanctlConf]);
  }

  private restarting = false;

  /**
   * Starts charon again and loads its connection, until that succeeds: a failed attempt (charon did not come up, the
   * load failed) is tried again after 0.5 s, 1 s, 2 s ... at most 30 s. One restart at a time: the exit of a charon
   * that an attempt started does not start another.
   */
  private restart(): void {
    if (this.restarting) return;
    this.restarting = true;
    void (async () => {
      for (let attempt = 1; !this.stopped; attempt++) {
        await sleep(backoffMs(attempt, { minMs: 500, maxMs: 30_000 }));
        if (this.stopped) break;
        try {
          await this.spawnAndLoad();
          this.restarting = false;
          this.onLoaded();
          return;
        } catch (err) {
          logger.error({ ns: this.ns, err: (err as Error).message, attempt }, 'ipsec: charon restart failed; trying again');
          // a charon left running without its connection is stopped first (its exit is not this restart's concern)
          const left = this.child;
          this.child = undefined;
          if (left && left.exitCode === null) left.kill('SIGKILL');
        }
      }
      this.restarting = false;
    })();
  }

  swanctl(args: string[]): Promise<string> {
    return run(SWANCTL_PATH, [...args, '--uri', `unix://${this.vici}`], { timeout: 10_000 }).then((r) => r.stdout);
  }

  async report(name: string): Promise<SaReport> {
    return saReport(await this.swanctl(['--list-sas', '--raw']), name);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child;
    if (child && child.exitCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
