/**
 * What the edge does with each change notification (edge/state/changes.ts): which of its in-memory tables it reloads, and
 * after which changes open connections are asked again whether they may stay. A full reload follows every
 * (re)connection of the feed and the periodic resync; `settled()` waits for every change queued so far.
 */
import { logger } from '../../shared/logger.js';
import type { EdgeChange } from '../types.js';

/** Changes after which open connections are asked again whether they may stay (edge/revocation.ts). */
const REVOCATION_TABLES = new Set([
  'shares',
  'share_frontends',
  'frontends',
  'custom_frontends',
  'auth_providers',
  'client_certificates',
  'certificate_authorities',
  'hubs',
]);
/** Tables whose change reloads every route ('environments': a reach changed, which every share of it carries). */
const FULL_RELOAD_TABLES = new Set(['frontends', 'custom_frontends', 'auth_providers', 'environments']);
const TLS_TABLES = new Set(['custom_frontends', 'edge_certificates']);
const ACCESS_TABLES = new Set(['client_certificates', 'certificate_authorities']);

type Work = Promise<unknown> | undefined;

/** The parts of the edge that hold what changes (structural: each is its module's class). */
export interface ChangeTargets {
  routes: { reloadAll(): Work; reloadShare(zId: string): Work };
  tcp: { reloadAll(): Work; reloadShare(zId: string): Work; sweep(): void };
  certificates: { reload(): Work };
  access: { mutualTls?: { load(): Work; onChange(change: EdgeChange): Work } };
  directory: { reload(): Promise<unknown> };
  /** The HTTP checks agents probe targets with (edge/agents/checks.ts). */
  checks?: { reload(): Promise<unknown> };
  gateway: { directoryChanged(): void; targetsChanged(): void } | undefined;
  ipsec: { changed(): void } | undefined;
  connections: { sweep(): void };
  live: () => { changed(): Promise<unknown> } | undefined;
}

export class ChangeRouting {
  private applied: Promise<unknown> = Promise.resolve();

  constructor(private readonly t: ChangeTargets) {}

  reloadEverything(): Promise<unknown> {
    const t = this.t;
    this.applied = Promise.all([
      t.routes.reloadAll(),
      t.tcp.reloadAll(),
      t.certificates.reload(),
      t.access.mutualTls?.load(),
      t.directory.reload(),
      t.checks?.reload(),
    ])
      .then(() => t.gateway?.directoryChanged())
      .catch((err) => logger.error({ err: (err as Error).message }, 'edge: reload failed'));
    return this.applied;
  }

  apply(change: EdgeChange): void {
    const t = this.t;
    const work: Work[] = [];
    if (change.table === 'shares' || change.table === 'share_frontends') {
      if (change.id) work.push(t.routes.reloadShare(change.id), t.tcp.reloadShare(change.id));
    } else if (FULL_RELOAD_TABLES.has(change.table)) work.push(t.routes.reloadAll());
    if (TLS_TABLES.has(change.table)) work.push(t.certificates.reload());
    if (ACCESS_TABLES.has(change.table) && t.access.mutualTls) work.push(t.access.mutualTls.onChange(change));
    if (change.table === 'ipsec_local_tunnels' || change.table === 'ipsec_local_listeners') t.ipsec?.changed();
    if (change.table === 'agents') work.push(t.directory.reload().then(() => t.gateway?.directoryChanged()));
    if (change.table === 'edge_processes') work.push(t.live()?.changed());
    if (change.table === 'health_checks' && t.checks) work.push(t.checks.reload().then(() => t.gateway?.targetsChanged()));
    this.applied = Promise.all([this.applied, ...work]).catch((err) => logger.error({ err: (err as Error).message, change }, 'edge: change not applied'));
    // a certificate added revokes nothing (its hub's CA, rows changed or deleted may): no pass over open connections
    const revokes = REVOCATION_TABLES.has(change.table) && !(change.table === 'client_certificates' && change.op === 'INSERT');
    if (revokes) void this.applied.then(() => (t.connections.sweep(), t.tcp.sweep()));
    if (change.table === 'shares' || change.table === 'share_frontends' || FULL_RELOAD_TABLES.has(change.table))
      void this.applied.then(() => t.gateway?.targetsChanged());
  }

  /** Resolves once every change queued so far has been applied. */
  async settled(): Promise<void> {
    for (let previous: unknown; previous !== this.applied; ) {
      previous = this.applied;
      await this.applied;
    }
  }
}
