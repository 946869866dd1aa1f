/**
 * The live edges, for agents: each edge publishes the addresses agents dial it at (HUB_EDGE_AGENT_ADDRESSES) in
 * edge_processes with a heartbeat and an expiry, and reads the set of every edge whose expiry has not passed. The
 * gateway hands that set to its connected agents, so that an agent that knows one edge dials them all. A stopped edge
 * deletes its row (the others hear of it at once by notification); one that died stops counting once its expiry
 * passes, noticed by the others' next heartbeat.
 */
import type pg from 'pg';
import { logger } from '../../shared/logger.js';

export class LiveEdges {
  private live: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private work: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly pool: pg.Pool,
    readonly edgeId: string,
    /** This edge's own agent addresses. */
    readonly self: string[],
    private readonly onChange: () => void,
    private readonly heartbeatMs: number,
    private readonly ttlMs: number,
  ) {}

  /** Every live edge's agent addresses (this one's included), sorted. */
  get addresses(): string[] {
    return this.live;
  }

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat(), this.heartbeatMs);
    this.timer.unref();
  }

  /** Publishes this edge (again) with a fresh expiry, drops long-expired rows, then reads the set. */
  private beat(): Promise<unknown> {
    return this.serial(async () => {
      await this.pool.query(
        `INSERT INTO edge_processes (id, agent_addresses, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
         ON CONFLICT (id) DO UPDATE SET agent_addresses = EXCLUDED.agent_addresses, last_seen_at = now(), expires_at = EXCLUDED.expires_at`,
        [this.edgeId, this.self, this.ttlMs / 1000],
      );
      await this.pool.query(`DELETE FROM edge_processes WHERE expires_at < now() - interval '10 minutes'`);
      await this.load();
    });
  }

  /** An edge came or went (notification): read the set again. */
  changed(): Promise<unknown> {
    return this.serial(() => this.load());
  }

  private async load(): Promise<void> {
    const { rows } = await this.pool.query<{ address: string }>(
      `SELECT DISTINCT unnest(agent_addresses) AS address FROM edge_processes WHERE expires_at > now() ORDER BY 1`,
    );
    const next = rows.map((r) => r.address);
    if (next.length === this.live.length && next.every((a, i) => a === this.live[i])) return;
    this.live = next;
    this.onChange();
  }

  private serial(task: () => Promise<unknown>): Promise<unknown> {
    this.work = this.work.then(task).catch((err) => logger.warn({ err: (err as Error).message }, 'edge: live edges not read or written'));
    return this.work;
  }

  /** The edge stops: its row goes, and the other edges tell their agents. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.serial(() => this.pool.query(`DELETE FROM edge_processes WHERE id = $1`, [this.edgeId]));
  }
}
