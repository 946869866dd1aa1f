/**
 * One tunnel as it runs: its namespace (netns.ts), its charon (charon.ts) and the relay process that holds its IPsec
 * shares' listeners (relay.ts), restarted when it dies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { backoffMs } from '../../shared/backoff.js';
import { logger } from '../../shared/logger.js';
import { Charon, connectionName, responderConfig, type ResponderSpec, type SaReport } from './charon.js';
import { createTunnelNetwork, netnsMarker, removeTunnelNetwork, tunnelNetns, type TunnelNetwork } from './netns.js';

const RELAY = fileURLToPath(new URL('./relay.ts', import.meta.url));
const ROOT = path.resolve(path.dirname(RELAY), '../..');

export interface TunnelSpec extends ResponderSpec {
  tunnelId: string;
  nlbPrivateIp: string;
  insideAws: string;
  insideCustomer: string;
}

/** What the runtime was made from: a change of any of these re-creates it. */
export const specKey = (s: TunnelSpec) =>
  JSON.stringify([s.outside, s.peerPublicIp, s.peerCidr, s.vpcCidr, s.preSharedKey, s.options, s.nlbPrivateIp, s.insideAws]);

type Waiter = { resolve: () => void; reject: (err: Error) => void };

export class TunnelRuntime {
  readonly ns: string;
  readonly key: string;
  private readonly charon: Charon;
  private relay: ChildProcess | undefined;
  private relayReady: Promise<void> | undefined;
  private readonly waiters = new Map<string, Waiter>();
  /** Shares whose listener is open, with the port it is on. */
  readonly listening = new Map<string, number>();
  private stopped = false;
  /** Called when the relay died (its listeners are gone): the host reconciles. */
  onLost: () => void = () => undefined;

  constructor(
    readonly spec: TunnelSpec,
    dataDir: string,
    private readonly edgeSocket: string,
    private readonly wanNetns: string | undefined,
  ) {
    this.ns = tunnelNetns(spec.tunnelId);
    this.key = specKey(spec);
    this.charon = new Charon(this.ns, path.join(dataDir, this.ns), responderConfig(spec));
    this.marker = netnsMarker(dataDir, this.ns);
  }

  /** This deployment's mark on the namespace (see netnsMarker): made before it, removed after it. */
  private readonly marker: string;

  get charonPid(): number | undefined {
    return this.charon.pid;
  }

  set onCharonReloaded(fn: () => void) {
    this.charon.onLoaded = fn;
  }

  async up(): Promise<void> {
    const net: TunnelNetwork = {
      ns: this.ns,
      outside: this.spec.outside,
      insideAws: this.spec.insideAws,
      insideCustomer: this.spec.insideCustomer,
      nlbPrivateIp: this.spec.nlbPrivateIp,
    };
    mkdirSync(path.dirname(this.marker), { recursive: true, mode: 0o700 });
    writeFileSync(this.marker, `${process.pid}\n`);
    await createTunnelNetwork(net, this.wanNetns);
    await this.charon.start();
    await this.startRelay();
  }

  /** Relays in a row that exited before they were ready, and when the next may be started. */
  private relayFailures = 0;
  private relayRetryAt = 0;

  /** Relays started so far (a relay that cannot start is not started in a loop). */
  relayStarts = 0;

  private startRelay(): Promise<void> {
    this.relayStarts++;
    let ready = false;
    const relay = spawn('ip', ['netns', 'exec', this.ns, process.execPath, '--import', 'tsx', RELAY, this.edgeSocket], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.relay = relay;
    this.relayReady = new Promise<void>((resolve, reject) => {
      readline.createInterface({ input: relay.stdout! }).on('line', (line) => {
        let event: { event?: string; shareId?: string; message?: string };
        try {
          event = JSON.parse(line);
        } catch {
          return;
        }
        if (event.event === 'ready') {
          ready = true;
          this.relayFailures = 0;
          return resolve();
        }
        const waiter = event.shareId ? this.waiters.get(event.shareId) : undefined;
        if (event.shareId) this.waiters.delete(event.shareId);
        if (event.event === 'listening' || event.event === 'closed') waiter?.resolve();
        if (event.event === 'failed') {
          if (event.shareId) this.listening.delete(event.shareId);
          waiter?.reject(new Error(event.message ?? 'the listener failed'));
        }
      });
      relay.once('exit', (code) => {
        reject(new Error(`the relay of ${this.ns} exited (${code})`));
        if (this.stopped || this.relay !== relay) return;
        logger.warn({ ns: this.ns, code }, 'ipsec: the share relay exited; its listeners are gone');
        this.listening.clear();
        for (const w of this.waiters.values()) w.reject(new Error('the relay exited'));
        this.waiters.clear();
        this.relay = undefined;
        // one that never got ready (its namespace gone, node unable to start) is not started again at once: the
        // host is told after 0.5 s, 1 s, 2 s ... at most 30 s, not in a loop as fast as it fails
        if (ready) return this.onLost();
        const delay = backoffMs(++this.relayFailures, { minMs: 500, maxMs: 30_000 });
        this.relayRetryAt = Date.now() + delay;
        setTimeout(() => {
          if (!this.stopped) this.onLost();
        }, delay).unref();
      });
    });
    return this.relayReady;
  }

  get relayAlive(): boolean {
    return Boolean(this.relay && this.relay.exitCode === null);
  }

  private command(shareId: string, command: Record<string, unknown>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!this.relay?.stdin?.writable) return reject(new Error('the relay is not running'));
      this.waiters.get(shareId)?.reject(new Error('superseded'));
      this.waiters.set(shareId, { resolve, reject });
      this.relay.stdin.write(JSON.stringify({ ...command, shareId }) + '\n');
    });
  }

  async listen(shareId: string, port: number): Promise<void> {
    if (!this.relayAlive) {
      const wait = this.relayRetryAt - Date.now();
      if (wait > 0) throw new Error(`the relay of ${this.ns} failed to start; tried again in ${Math.ceil(wait / 1000)} s`);
      await this.startRelay();
    }
    await this.relayReady;
    await this.command(shareId, { op: 'listen', ip: this.spec.nlbPrivateIp, port });
    this.listening.set(shareId, port);
  }

  async close(shareId: string): Promise<void> {
    this.listening.delete(shareId);
    if (this.relayAlive) await this.command(shareId, { op: 'close' }).catch(() => undefined);
  }

  report(): Promise<SaReport> {
    return this.charon.report(connectionName(this.spec.vpnConnectionId));
  }

  async down(): Promise<void> {
    this.stopped = true;
    for (const w of this.waiters.values()) w.reject(new Error('the tunnel is going down'));
    this.waiters.clear();
    this.relay?.stdin?.end();
    this.relay?.kill('SIGTERM');
    await this.charon.stop();
    await removeTunnelNetwork(this.ns, this.wanNetns);
    rmSync(this.marker, { force: true });
  }
}
