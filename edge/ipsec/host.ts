/**
 * The IPsec data plane, run by one edge process at a time: the one holding a
 * PostgreSQL advisory lock on a connection of its own (when it dies, its session ends, the lock goes, and another
 * edge takes over within seconds). It makes the machine match PostgreSQL: a namespace and a charon per live
 * tunnel of the strongSwan provider (ipsec_local_tunnels), a listener per live IPsec share (ipsec_local_listeners),
 * and reports back what runs (loaded_at, listening_at, the security association's state), which the worker's
 * provider waits on. Each connection accepted by a share's listener reaches this process over a Unix socket and is
 * carried through an agent of the share's environment to its target, metered as the share's bytes.
 */
import { mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { parseAuthority, authorityOf } from 'edgehub-agent/protocol';
import { logger } from '../../shared/logger.js';
import type { TunnelOptions } from '../../shared/ipsec/options.js';
import { insideAddresses } from '../../shared/ipsec/proposals.js';
import { decryptSecret } from '../../shared/secrets.js';
import { envKey } from '../agents/directory.js';
import type { Meter } from '../meter.js';
import type { AgentGateway, ShareRoute } from '../types.js';
import { netnsMarker, removeTunnelNetwork, tunnelNetworks } from './netns.js';
import { specKey, TunnelRuntime, type TunnelSpec } from './tunnel.js';

/** pg_try_advisory_lock key: "edgehub ipsec host". */
const LOCK_KEY = 0x49505345;

interface IpsecHostOptions {
  databaseUrl: string;
  pool: pg.Pool;
  gateway: AgentGateway;
  meter: Meter;
  dataDir: string;
  vpcCidr: string;
  wanNetns?: string;
  /** The targets of some environment's IPsec shares changed (agents must be told). */
  onTargetsChanged: () => void;
  intervalMs?: number;
}

interface ShareEntry {
  shareId: string;
  tunnelId: string;
  hubId: string;
  envZId: string;
  target: string;
  port: number;
}

export class IpsecHost {
  private lock: pg.Client | undefined;
  private holding = false;
  private stopped = false;
  private readonly tunnels = new Map<string, TunnelRuntime>();
  private shares = new Map<string, ShareEntry>();
  private targets = new Map<string, string[]>();
  private work: Promise<void> = Promise.resolve();
  private queued = false;
  private timer: NodeJS.Timeout | undefined;
  private lockTimer: NodeJS.Timeout | undefined;
  private readonly socketPath: string;
  private readonly streams: net.Server;

  constructor(private readonly o: IpsecHostOptions) {
    const dir = path.join(o.dataDir, 'ipsec');
    this.socketPath = path.join(dir, `edge-${process.pid}.sock`);
    this.streams = net.createServer({ allowHalfOpen: true }, (socket) => this.carry(socket));
  }

  async start(): Promise<void> {
    mkdirSync(path.dirname(this.socketPath), { recursive: true, mode: 0o700 });
    rmSync(this.socketPath, { force: true });
    await new Promise<void>((resolve, reject) => this.streams.once('error', reject).listen(this.socketPath, () => resolve()));
    await this.tryLock();
    this.timer = setInterval(() => this.changed(), this.o.intervalMs ?? 3_000);
    this.timer.unref();
  }

  /** Whether this edge runs the IPsec data plane now. */
  get isHost(): boolean {
    return this.holding;
  }

  /** The charon process of a tunnel (tests kill it to see it come back). */
  charonPid(tunnelId: string): number | undefined {
    return this.tunnels.get(tunnelId)?.charonPid;
  }

  private async tryLock(): Promise<void> {
    if (this.stopped || this.holding) return;
    try {
      const client = new pg.Client({ connectionString: this.o.databaseUrl, application_name: 'edgehub-ipsec-host', keepAlive: true });
      client.on('error', () => undefined);
      await client.connect();
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [LOCK_KEY]);
      if (!rows[0]?.locked) {
        await client.end();
      } else {
        this.lock = client;
        this.holding = true;
        client.once('end', () => this.lost());
        client.once('error', () => this.lost());
        logger.info({}, 'ipsec: this edge runs the IPsec data plane (strongSwan)');
        await this.sweepStale();
        this.changed();
      }
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'ipsec: could not take the IPsec host lock');
    }
    if (!this.holding && !this.stopped) {
      this.lockTimer = setTimeout(() => void this.tryLock(), 5_000);
      this.lockTimer.unref();
    }
  }

  /** The lock's connection is gone: another edge may take over, so nothing of ours may keep running. */
  private lost(): void {
    if (!this.holding) return;
    this.holding = false;
    this.lock = undefined;
    logger.warn({}, 'ipsec: lost the IPsec host lock; stopping the tunnels here');
    this.work = this.work.then(() => this.stopAll());
    if (!this.stopped) this.lockTimer = setTimeout(() => void this.tryLock(), 5_000);
  }

  /**
   * Namespaces of tunnels an earlier host of this deployment left on this machine (a crash): removed before anything
   * starts. Only ours (marked in our data directory): another deployment's tunnels on the machine are left alone.
   */
  private async sweepStale(): Promise<void> {
    const dir = path.join(this.o.dataDir, 'ipsec');
    for (const ns of await tunnelNetworks(dir)) {
      if ([...this.tunnels.values()].some((t) => t.ns === ns)) continue;
      await removeTunnelNetwork(ns, this.o.wanNetns);
      rmSync(netnsMarker(dir, ns), { force: true });
    }
  }

  /** Something changed (a notification, the timer, a process that died): reconcile, coalesced. */
  changed(): void {
    if (!this.holding || this.queued) return;
    this.queued = true;
    this.work = this.work
      .then(() => {
        this.queued = false;
        return this.reconcile();
      })
      .catch((err) => logger.error({ err: (err as Error).message }, 'ipsec: reconcile failed'));
  }

  /** `host:port` targets of the environment's IPsec shares (agents are told them with the HTTP shares'). */
  targetsOf(hubId: string, envZId: string): string[] {
    return this.targets.get(envKey(hubId, envZId)) ?? [];
  }

  private async reconcile(): Promise<void> {
    if (!this.holding) return;
    const pool = this.o.pool;
    const { rows } = await pool.query<{
      tunnel_id: string;
      vpn_connection_id: string;
      outside: string;
      nlb: string;
      inside_cidr: string;
      psk: string;
      options: TunnelOptions;
      peer_public_ip: string;
      peer_cidr: string;
    }>(
      `SELECT lt.tunnel_id, lt.vpn_connection_id, host(lt.outside_ip_address) AS outside, host(lt.nlb_private_ip) AS nlb, lt.inside_cidr::text AS inside_cidr,
              lt.pre_shared_key_sealed AS psk, lt.tunnel_options AS options, t.peer_public_ip, t.peer_cidr
         FROM ipsec_local_tunnels lt JOIN ipsec_tunnels t ON t.id = lt.tunnel_id
        WHERE lt.released_at IS NULL AND lt.state = 'available' AND lt.vpn_connection_id IS NOT NULL`,
    );
    const wanted = new Map<string, TunnelSpec>();
    for (const r of rows) {
      const inside = insideAddresses(r.inside_cidr);
      wanted.set(r.tunnel_id, {
        tunnelId: r.tunnel_id,
        vpnConnectionId: r.vpn_connection_id,
        outside: r.outside,
        peerPublicIp: r.peer_public_ip,
        peerCidr: r.peer_cidr,
        vpcCidr: this.o.vpcCidr,
        preSharedKey: decryptSecret(r.psk),
        options: r.options,
        nlbPrivateIp: r.nlb,
        insideAws: inside.aws,
        insideCustomer: inside.customer,
      });
    }
    // tunnels that went (or changed): down, and said so
    for (const [id, runtime] of this.tunnels) {
      const spec = wanted.get(id);
      if (spec && specKey(spec) === runtime.key) continue;
      this.tunnels.delete(id);
      for (const [shareId, entry] of this.shares) if (entry.tunnelId === id) this.shares.delete(shareId);
      await runtime.down().catch((err) => logger.error({ tunnelId: id, err: (err as Error).message }, 'ipsec: tunnel teardown failed'));
      await pool.query(`UPDATE ipsec_local_tunnels SET loaded_at = NULL, sa_status = NULL, sa_status_message = NULL WHERE tunnel_id = $1`, [id]);
      await pool.query(`UPDATE ipsec_local_listeners SET listening_at = NULL WHERE tunnel_id = $1`, [id]);
      logger.info({ tunnelId: id }, 'ipsec: tunnel unloaded');
    }
    // tunnels to run
    for (const [id, spec] of wanted) {
      if (this.tunnels.has(id)) continue;
      const runtime = new TunnelRuntime(spec, path.join(this.o.dataDir, 'ipsec'), this.socketPath, this.o.wanNetns);
      try {
        await runtime.up();
      } catch (err) {
        logger.error({ tunnelId: id, err: (err as Error).message }, 'ipsec: tunnel could not be loaded');
        await runtime.down().catch(() => undefined);
        await pool.query(`UPDATE ipsec_local_tunnels SET sa_status = 'DOWN', sa_status_message = $2, sa_checked_at = now() WHERE tunnel_id = $1`, [
          id,
          `charon could not load the tunnel: ${(err as Error).message}`,
        ]);
        continue;
      }
      runtime.onLost = () => this.changed();
      runtime.onCharonReloaded = () => this.changed();
      this.tunnels.set(id, runtime);
      await pool.query(`UPDATE ipsec_local_tunnels SET loaded_at = now() WHERE tunnel_id = $1`, [id]);
      logger.info({ tunnelId: id, ns: runtime.ns }, 'ipsec: tunnel loaded (charon holds the connection)');
    }
    await this.reconcileListeners();
    // what charon says of each security association
    for (const [id, runtime] of this.tunnels) {
      const report = await runtime.report().catch((err) => ({ status: 'DOWN' as const, message: `charon did not answer: ${(err as Error).message}` }));
      await pool.query(
        `UPDATE ipsec_local_tunnels SET sa_status = $2, sa_status_message = $3, sa_checked_at = now(), loaded_at = coalesce(loaded_at, now()) WHERE tunnel_id = $1`,
        [id, report.status, report.message],
      );
    }
  }

  private async reconcileListeners(): Promise<void> {
    const pool = this.o.pool;
    const { rows } = await pool.query<{ share_id: string; tunnel_id: string; ingress_port: number; target: string; hub_id: string; env_z_id: string }>(
      `SELECT l.share_id, l.tunnel_id, l.ingress_port, l.target, s.hub_id, s.env_z_id
         FROM ipsec_local_listeners l JOIN ipsec_shares s ON s.id = l.share_id
        WHERE l.released_at IS NULL`,
    );
    const wanted = new Map<string, ShareEntry>(
      rows.map((r) => [
        r.share_id,
        { shareId: r.share_id, tunnelId: r.tunnel_id, hubId: r.hub_id, envZId: r.env_z_id, target: r.target, port: r.ingress_port },
      ]),
    );
    for (const [shareId, entry] of this.shares) {
      const next = wanted.get(shareId);
      if (next && next.port === entry.port && next.tunnelId === entry.tunnelId && this.tunnels.get(entry.tunnelId)?.listening.has(shareId)) {
        this.shares.set(shareId, next); // the target may change without re-listening
        continue;
      }
      this.shares.delete(shareId);
      await this.tunnels.get(entry.tunnelId)?.close(shareId);
      await pool.query(`UPDATE ipsec_local_listeners SET listening_at = NULL WHERE share_id = $1`, [shareId]);
    }
    for (const [shareId, entry] of wanted) {
      if (this.shares.has(shareId)) continue;
      const runtime = this.tunnels.get(entry.tunnelId);
      if (!runtime) continue;
      try {
        await runtime.listen(shareId, entry.port);
      } catch (err) {
        logger.error({ shareId, err: (err as Error).message }, 'ipsec: share listener could not be opened');
        continue;
      }
      this.shares.set(shareId, entry);
      await pool.query(`UPDATE ipsec_local_listeners SET listening_at = now() WHERE share_id = $1 AND released_at IS NULL`, [shareId]);
      logger.info({ shareId, port: entry.port }, 'ipsec: share listening');
    }
    // listeners released before we ever listened: nothing to close, and the provider waits for "closed"
    await pool.query(`UPDATE ipsec_local_listeners SET listening_at = NULL WHERE released_at IS NOT NULL AND listening_at IS NOT NULL`);
    const targets = new Map<string, string[]>();
    for (const e of this.shares.values()) {
      const t = parseAuthority(e.target);
      if (!t) continue;
      const key = envKey(e.hubId, e.envZId);
      targets.set(key, [...(targets.get(key) ?? []), authorityOf(t.host, t.port)]);
    }
    const changed = JSON.stringify([...targets].sort()) !== JSON.stringify([...this.targets].sort());
    this.targets = targets;
    if (changed) this.o.onTargetsChanged();
  }

  /** A connection accepted by a share's listener (first line: the share id): carried through an agent, metered. */
  private carry(socket: net.Socket): void {
    socket.on('error', () => undefined);
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\n');
      if (end < 0) {
        if (head.length > 200) socket.destroy();
        return;
      }
      socket.off('data', onData);
      socket.pause();
      const shareId = head.slice(0, end);
      const rest = Buffer.from(head.slice(end + 1), 'latin1');
      const entry = this.shares.get(shareId);
      const target = entry && parseAuthority(entry.target);
      if (!entry || !target) return void socket.destroy();
      const route = { zId: shareId, hubId: entry.hubId, envZId: entry.envZId, frontendId: 'ipsec' } as ShareRoute;
      this.o.gateway.openStream(entry.hubId, entry.envZId, authorityOf(target.host, target.port)).then(
        (stream) => {
          // the share's bytes as they pass (the line naming the share is the relay's, not the client's)
          this.o.meter.add(route, rest.length, 0);
          socket.on('data', (chunk: Buffer) => this.o.meter.add(route, chunk.length, 0));
          stream.on('data', (chunk: Buffer) => this.o.meter.add(route, 0, chunk.length));
          if (rest.length) stream.write(rest);
          socket.pipe(stream);
          stream.pipe(socket);
          stream.on('error', () => socket.destroy());
          socket.once('close', () => stream.destroy());
          socket.resume();
        },
        (err) => {
          logger.info({ shareId, err: (err as Error).message }, 'ipsec: share connection not carried');
          socket.destroy();
        },
      );
    };
    socket.on('data', onData);
  }

  private async stopAll(): Promise<void> {
    const ids = [...this.tunnels.keys()];
    for (const runtime of this.tunnels.values()) await runtime.down().catch(() => undefined);
    this.tunnels.clear();
    this.shares.clear();
    if (ids.length) {
      await this.o.pool
        .query(`UPDATE ipsec_local_tunnels SET loaded_at = NULL, sa_status = NULL, sa_status_message = NULL WHERE tunnel_id = ANY($1)`, [ids])
        .catch(() => undefined);
      await this.o.pool.query(`UPDATE ipsec_local_listeners SET listening_at = NULL WHERE tunnel_id = ANY($1)`, [ids]).catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.lockTimer) clearTimeout(this.lockTimer);
    await this.work;
    if (this.holding) await this.stopAll();
    this.holding = false;
    await this.lock?.end().catch(() => undefined);
    await new Promise<void>((resolve) => this.streams.close(() => resolve()));
    rmSync(this.socketPath, { force: true });
  }
}
