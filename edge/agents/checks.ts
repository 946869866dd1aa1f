/**
 * The HTTP health checks agents probe their targets with: an enabled health check of a hub whose `target` is a share's
 * target (the same origin) is that share's HTTP check, and the agents of the share's environment probe the target
 * with it (its method and path, expecting its status) instead of a bare TCP connection (agent/lib/health.js). Loaded
 * from PostgreSQL, again on each change of a check's definition (migration 1601's trigger; a run does not notify).
 */
import type pg from 'pg';
import { targetAuthority } from 'edgehub-agent/protocol';
import { logger } from '../../shared/logger.js';

/** What an agent is told of a target's HTTP check (agent/lib/protocol.js). */
interface TargetCheck {
  method: string;
  path: string;
  status: number;
  timeoutMs: number;
  tls: boolean;
  /** The Host header and TLS server name: the check target's host name. */
  host: string;
}

export class TargetChecks {
  /** By hub, then by the check target's authority (host:port). */
  private byHub = new Map<string, Map<string, TargetCheck>>();
  private work: Promise<void> = Promise.resolve();

  constructor(private readonly pool: pg.Pool) {}

  reload(): Promise<void> {
    this.work = this.work
      .then(async () => {
        const { rows } = await this.pool.query<{ hub_id: string; method: string; path: string; expected_status: number; target: string; timeout_ms: number }>(
          `SELECT hub_id, method, path, expected_status, target, timeout_ms FROM health_checks WHERE enabled AND target IS NOT NULL ORDER BY created_at, id`,
        );
        const byHub = new Map<string, Map<string, TargetCheck>>();
        for (const r of rows) {
          let url: URL;
          try {
            url = new URL(r.target);
          } catch {
            continue;
          }
          const checks = byHub.get(r.hub_id) ?? new Map<string, TargetCheck>();
          byHub.set(r.hub_id, checks);
          const authority = targetAuthority(url);
          // the first check of a target counts
          if (checks.has(authority)) continue;
          const base = url.pathname.replace(/\/+$/, '');
          checks.set(authority, {
            method: r.method,
            path: `${base}${r.path}`,
            status: r.expected_status,
            timeoutMs: r.timeout_ms,
            tls: url.protocol === 'https:',
            host: url.hostname,
          });
        }
        this.byHub = byHub;
      })
      .catch((err) => logger.error({ err: (err as Error).message }, 'edge: health checks not loaded'));
    return this.work;
  }

  /** The HTTP checks of `authorities` (targets of a hub's shares) that have one. */
  of(hubId: string, authorities: Iterable<string>): Record<string, TargetCheck> {
    const checks = this.byHub.get(hubId);
    const out: Record<string, TargetCheck> = {};
    if (!checks) return out;
    for (const a of authorities) {
      const check = checks.get(a);
      if (check) out[a] = check;
    }
    return out;
  }
}
