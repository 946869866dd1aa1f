/**
 * The agents this edge admits, from PostgreSQL (table `agents`, kept current by change notifications): an agent is
 * known by the SHA-256 fingerprint of its certificate, and belongs to one environment of one hub. A deleted row is a
 * revoked agent: it is gone from here, so its certificate admits nothing (the gateway also closes its connections).
 */
import type pg from 'pg';
import { logger } from '../../shared/logger.js';

export interface AgentRecord {
  id: string;
  hubId: string;
  envZId: string;
  fingerprint: string;
  notAfter: number;
}

export const envKey = (hubId: string, envZId: string) => `${hubId} ${envZId}`;

export class AgentDirectory {
  private byFingerprint = new Map<string, AgentRecord>();
  private byId = new Map<string, AgentRecord>();
  private work: Promise<void> = Promise.resolve();
  private queued = false;

  constructor(private readonly pool: pg.Pool) {}

  /** Queues a full reload (coalesced); resolves once the directory reflects the database as of the call. */
  reload(): Promise<void> {
    if (this.queued) return this.work;
    this.queued = true;
    const run = this.work.then(async () => {
      this.queued = false;
      const { rows } = await this.pool.query<{ id: string; hub_id: string; env_z_id: string; fingerprint_sha256: string; not_after: Date }>(
        `SELECT id, hub_id, env_z_id, fingerprint_sha256, not_after FROM agents`,
      );
      const byFingerprint = new Map<string, AgentRecord>();
      const byId = new Map<string, AgentRecord>();
      for (const r of rows) {
        const record = {
          id: r.id,
          hubId: r.hub_id,
          envZId: r.env_z_id,
          fingerprint: r.fingerprint_sha256.toLowerCase(),
          notAfter: new Date(r.not_after).getTime(),
        };
        byFingerprint.set(record.fingerprint, record);
        byId.set(record.id, record);
      }
      this.byFingerprint = byFingerprint;
      this.byId = byId;
    });
    this.work = run.catch((err) => logger.error({ err: (err as Error).message }, 'edge: agent directory load failed'));
    return this.work;
  }

  /** The agent a certificate (its SHA-256 fingerprint, hex) identifies, while enrolled and unexpired. */
  byCertificate(fingerprint: string): AgentRecord | undefined {
    const record = this.byFingerprint.get(fingerprint.toLowerCase());
    return record && record.notAfter > Date.now() ? record : undefined;
  }

  /** Whether the agent is still enrolled (not revoked). */
  has(agentId: string): boolean {
    return this.byId.has(agentId);
  }
}
