/**
 * Where agents are connected, written for the API (`GET H/environments/{envZId}` -> `agents[].connected`,
 * `connectedAt`, `lastSeenAt`, `edges`): one row per (agent, edge) in agent_connections, inserted when the agent's
 * first connection to this edge is up, refreshed by a heartbeat, deleted when its last one goes. An edge that dies
 * without cleaning up leaves rows that stop being refreshed, and the API stops counting them after AGENT_SEEN_MS.
 */
import type pg from 'pg';
import { logger } from '../../shared/logger.js';

export class Presence {
  private readonly counts = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private work: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly pool: pg.Pool,
    readonly edgeId: string,
    heartbeatMs = 5_000,
  ) {
    this.timer = setInterval(() => this.heartbeat(), heartbeatMs);
    this.timer.unref();
  }

  /** Statements run one after another, so a disconnect never overtakes the connect it undoes. */
  private run(sql: string, params: unknown[]): Promise<unknown> {
    this.work = this.work
      .then(() => this.pool.query(sql, params))
      .catch((err) => logger.warn({ err: (err as Error).message }, 'edge: agent presence not written'));
    return this.work;
  }

  connected(agentId: string, edgeAddress: string): Promise<unknown> {
    const n = (this.counts.get(agentId) ?? 0) + 1;
    this.counts.set(agentId, n);
    if (n > 1) return this.work;
    return this.run(
      `INSERT INTO agent_connections (agent_id, edge_id, edge_address) SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM agents WHERE id = $1)
       ON CONFLICT (agent_id, edge_id) DO UPDATE SET edge_address = EXCLUDED.edge_address, connected_at = now(), last_seen_at = now()`,
      [agentId, this.edgeId, edgeAddress],
    );
  }

  disconnected(agentId: string): Promise<unknown> {
    const n = (this.counts.get(agentId) ?? 0) - 1;
    if (n > 0) {
      this.counts.set(agentId, n);
      return this.work;
    }
    this.counts.delete(agentId);
    return this.run(`DELETE FROM agent_connections WHERE agent_id = $1 AND edge_id = $2`, [agentId, this.edgeId]);
  }

  private heartbeat(): void {
    if (!this.counts.size) return;
    void this.run(`UPDATE agent_connections SET last_seen_at = now() WHERE edge_id = $1 AND agent_id = ANY($2)`, [this.edgeId, [...this.counts.keys()]]);
  }

  /** The edge stops: its rows go. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.counts.clear();
    await this.run(`DELETE FROM agent_connections WHERE edge_id = $1`, [this.edgeId]);
  }
}
