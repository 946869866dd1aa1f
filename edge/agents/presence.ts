/**
 * Where agents are connected, written for the API (`GET H/environments/{envZId}` -> `agents[].connected`,
 * `connectedAt`, `lastSeenAt`, `edges`): one row per (agent, edge) in agent_connections, inserted when the agent's
 * first connection to this edge is up, refreshed by a heartbeat, deleted when its last one goes. An edge that dies
 * without cleaning up leaves rows that stop being refreshed, and the API stops counting them after AGENT_SEEN_MS.
 * The heartbeat writes the row of every agent connected here, not only refreshes rows that exist: an agent that
 * connected while PostgreSQL was away (its insert failed) is shown connected at the first heartbeat after it is back.
 * The row carries the agent's pool state as this edge last heard it (weight, priority, draining, the shares whose
 * target it reports down): written when it changes and by every heartbeat.
 */
import type pg from 'pg';
import { logger } from '../../shared/logger.js';
import { logThrottle } from '../../shared/logThrottle.js';

const notWritten = logThrottle(30_000);

interface PoolState {
  weight: number;
  priority: number;
  draining: boolean;
  /** Share ids whose target the agent reports down. */
  targetsDown: string[];
}

const DEFAULT_STATE: PoolState = { weight: 1, priority: 0, draining: false, targetsDown: [] };

export class Presence {
  /** Per agent connected here: its connections, the address it dialled, and since when. */
  private readonly counts = new Map<string, { n: number; address: string; since: Date; state: PoolState }>();
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
      .catch((err) => {
        const message = (err as Error).message;
        // a heartbeat every 5 s while PostgreSQL is away: said once each 30 s per error
        notWritten(message, (repeated) => logger.warn({ err: message, repeated }, 'edge: agent presence not written'));
      });
    return this.work;
  }

  connected(agentId: string, edgeAddress: string): Promise<unknown> {
    const known = this.counts.get(agentId);
    if (known) {
      known.n++;
      return this.work;
    }
    this.counts.set(agentId, { n: 1, address: edgeAddress, since: new Date(), state: DEFAULT_STATE });
    return this.run(
      `INSERT INTO agent_connections (agent_id, edge_id, edge_address) SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM agents WHERE id = $1)
       ON CONFLICT (agent_id, edge_id) DO UPDATE SET edge_address = EXCLUDED.edge_address, connected_at = now(), last_seen_at = now()`,
      [agentId, this.edgeId, edgeAddress],
    );
  }

  /** The agent's pool state as one of its connections here said it (the last one said counts). */
  state(agentId: string, state: PoolState): Promise<unknown> {
    const known = this.counts.get(agentId);
    if (!known) return this.work;
    known.state = state;
    return this.run(`UPDATE agent_connections SET weight = $3, priority = $4, draining = $5, targets_down = $6 WHERE agent_id = $1 AND edge_id = $2`, [
      agentId,
      this.edgeId,
      state.weight,
      state.priority,
      state.draining,
      state.targetsDown,
    ]);
  }

  disconnected(agentId: string): Promise<unknown> {
    const known = this.counts.get(agentId);
    const n = (known?.n ?? 0) - 1;
    if (known && n > 0) {
      known.n = n;
      return this.work;
    }
    this.counts.delete(agentId);
    return this.run(`DELETE FROM agent_connections WHERE agent_id = $1 AND edge_id = $2`, [agentId, this.edgeId]);
  }

  private heartbeat(): void {
    if (!this.counts.size) return;
    const ids = [...this.counts.keys()];
    const held = ids.map((id) => this.counts.get(id)!);
    // agents deleted meanwhile are not written back (the join); a row a failed delete left behind takes this
    // connection's address and time
    void this.run(
      `INSERT INTO agent_connections (agent_id, edge_id, edge_address, connected_at, weight, priority, draining, targets_down)
       SELECT a.id, $1, x.address, x.since, x.weight, x.priority, x.draining, ARRAY(SELECT jsonb_array_elements_text(x.down))
         FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::int[], $6::int[], $7::boolean[], $8::jsonb[]) AS x(id, address, since, weight, priority, draining, down)
         JOIN agents a ON a.id = x.id
       ON CONFLICT (agent_id, edge_id) DO UPDATE SET last_seen_at = now(), edge_address = EXCLUDED.edge_address, connected_at = EXCLUDED.connected_at,
         weight = EXCLUDED.weight, priority = EXCLUDED.priority, draining = EXCLUDED.draining, targets_down = EXCLUDED.targets_down`,
      [
        this.edgeId,
        ids,
        held.map((h) => h.address),
        held.map((h) => h.since),
        held.map((h) => h.state.weight),
        held.map((h) => h.state.priority),
        held.map((h) => h.state.draining),
        held.map((h) => JSON.stringify(h.state.targetsDown)),
      ],
    );
  }

  /** The edge stops: its rows go. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.counts.clear();
    await this.run(`DELETE FROM agent_connections WHERE edge_id = $1`, [this.edgeId]);
  }
}
