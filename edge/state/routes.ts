import type pg from 'pg';
import { targetAuthority } from 'edgehub-agent/protocol';
import { durationMs } from '../../shared/durations.js';
import { logger } from '../../shared/logger.js';
import { decryptSecret } from '../../shared/secrets.js';
import type { StoredPolicy } from '../../shared/sharePolicy.js';
import { type CompiledPolicy, compilePolicy } from '../policy/compile.js';
import type { ShareRoute } from '../types.js';

const DEFAULT_CHECK_INTERVAL_MS = 3 * 3600_000;

interface RouteRow {
  z_id: string;
  hub_id: string;
  env_z_id: string;
  reach: string | null;
  target: string;
  mutual_tls: boolean;
  target_protocol: 'http1' | 'h2';
  oauth_email_domains: string[] | null;
  oauth_check_interval: string | null;
  inspect: boolean;
  policy: StoredPolicy | null;
  affinity: 'none' | 'client-ip' | 'cookie' | null;
  frontend_id: string;
  url_template: string;
  ap_id: string | null;
  ap_type: 'OIDC' | 'GOOGLE' | 'GITHUB' | null;
  ap_client_id: string | null;
  ap_client_secret_sealed: string | null;
  ap_issuer_url: string | null;
  ap_scopes: string[] | null;
  ap_email_patterns: string[] | null;
}

/** Every ACTIVE share on every active frontend it is published on, with its auth provider (one row per host). */
const ROUTES_SQL = `
  SELECT s.z_id, s.hub_id, s.env_z_id, e.reach, s.target, s.mutual_tls, s.target_protocol, s.oauth_email_domains, s.oauth_check_interval, s.inspect, s.policy, s.affinity,
         f.id AS frontend_id, f.url_template,
         ap.id AS ap_id, ap.type AS ap_type, ap.client_id AS ap_client_id, ap.client_secret_sealed AS ap_client_secret_sealed,
         ap.issuer_url AS ap_issuer_url, ap.scopes AS ap_scopes, ap.email_patterns AS ap_email_patterns
    FROM shares s
    LEFT JOIN environments e ON e.hub_id = s.hub_id AND e.env_z_id = s.env_z_id
    JOIN share_frontends sf ON sf.share_z_id = s.z_id
    JOIN frontends f ON f.id = sf.frontend_id AND f.active
    LEFT JOIN auth_providers ap ON ap.hub_id = s.hub_id AND ap.id = s.auth_provider_id
   WHERE s.status = 'ACTIVE' AND s.protocol = 'http'`;

/**
 * The host pattern of a URL template, `{token}` standing for one DNS label: `http://{token}.share.localhost:8000`
 * -> `{token}.share.localhost`. Undefined for a template whose host has no {token} (it cannot be routed by Host).
 */
export function hostPattern(urlTemplate: string): string | undefined {
  const match = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]+)/i.exec(urlTemplate);
  if (!match) return undefined;
  const host = match[1].replace(/:\d+$/, '').toLowerCase();
  return host.includes('{token}') ? host : undefined;
}

/** The Host header as a routing key: port dropped, lower case, a trailing dot dropped. */
export function routingHost(hostHeader: string | undefined): string {
  if (!hostHeader) return '';
  let host = hostHeader;
  if (host.charCodeAt(0) === 91 /* [ */) {
    const end = host.indexOf(']');
    host = end > 0 ? host.slice(0, end + 1) : host;
  } else {
    const colon = host.indexOf(':');
    if (colon >= 0) host = host.slice(0, colon);
  }
  host = host.toLowerCase();
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/**
 * The routing table: Host -> share route, loaded from PostgreSQL and kept current by change notifications. Lookups
 * are one Map access; loads build new entries aside and swap them in, so a request never sees half a change.
 */
export class RouteTable {
  private byHost = new Map<string, ShareRoute>();
  private hostsByShare = new Map<string, string[]>();
  /** Decrypted client secrets by sealed value (decrypt once per provider version, not per share). */
  private secrets = new Map<string, string>();
  private work: Promise<void> = Promise.resolve();
  private fullReloadQueued = false;

  constructor(private readonly pool: pg.Pool) {}

  lookup(host: string): ShareRoute | undefined {
    return this.byHost.get(host);
  }

  /** A routed share by its id (any of its hosts: they carry the same route but for the frontend). */
  byShare(zId: string): ShareRoute | undefined {
    const host = this.hostsByShare.get(zId)?.[0];
    return host === undefined ? undefined : this.byHost.get(host);
  }

  /** `host:port` of the targets of an environment's routed shares (what its agents may connect to). */
  targetsOf(hubId: string, envZId: string): string[] {
    const targets = new Set<string>();
    for (const route of this.byHost.values()) if (route.hubId === hubId && route.envZId === envZId) targets.add(targetAuthority(route.target));
    return [...targets];
  }

  /** An environment's routed shares with their targets (host:port). */
  sharesOf(hubId: string, envZId: string): { zId: string; authority: string }[] {
    const out = new Map<string, string>();
    for (const route of this.byHost.values()) if (route.hubId === hubId && route.envZId === envZId) out.set(route.zId, targetAuthority(route.target));
    return [...out].map(([zId, authority]) => ({ zId, authority }));
  }

  get size(): number {
    return this.byHost.size;
  }

  /** Queues a full reload (coalesced: one queued reload serves every request for one). */
  reloadAll(): Promise<void> {
    if (this.fullReloadQueued) return this.work;
    this.fullReloadQueued = true;
    return this.enqueue(async () => {
      this.fullReloadQueued = false;
      const { rows } = await this.pool.query<RouteRow>(ROUTES_SQL);
      const byHost = new Map<string, ShareRoute>();
      const hostsByShare = new Map<string, string[]>();
      const secrets = new Map<string, string>();
      const policies = new Map<string, CompiledPolicy | undefined>();
      for (const row of rows) this.place(row, byHost, hostsByShare, secrets, policies);
      this.byHost = byHost;
      this.hostsByShare = hostsByShare;
      this.secrets = secrets;
    });
  }

  /** Queues a reload of one share's routes (created, activated, deleted, moved). */
  reloadShare(zId: string): Promise<void> {
    return this.enqueue(async () => {
      const { rows } = await this.pool.query<RouteRow>(`${ROUTES_SQL} AND s.z_id = $1`, [zId]);
      for (const host of this.hostsByShare.get(zId) ?? []) this.byHost.delete(host);
      this.hostsByShare.delete(zId);
      const policies = new Map<string, CompiledPolicy | undefined>();
      for (const row of rows) this.place(row, this.byHost, this.hostsByShare, this.secrets, policies);
    });
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.work.then(task);
    // a failed load is logged; the next notification or resync tries again
    this.work = run.catch((err) => logger.error({ err: (err as Error).message }, 'edge: route load failed'));
    return run;
  }

  /** `policies`: the share's compiled policy, made once per load whatever the number of its hosts. */
  private place(
    row: RouteRow,
    byHost: Map<string, ShareRoute>,
    hostsByShare: Map<string, string[]>,
    secrets: Map<string, string>,
    policies: Map<string, CompiledPolicy | undefined>,
  ): void {
    const pattern = hostPattern(row.url_template);
    if (!pattern) return;
    let target: URL;
    try {
      target = new URL(row.target);
    } catch {
      logger.warn({ zId: row.z_id }, 'edge: share target is not a URL; not routed');
      return;
    }
    const host = pattern.replace('{token}', row.z_id);
    if (!policies.has(row.z_id)) policies.set(row.z_id, compilePolicy(row.policy));
    byHost.set(host, {
      zId: row.z_id,
      hubId: row.hub_id,
      envZId: row.env_z_id,
      // fail closed: anything but an explicit 'edge' is reached only through the environment's agents
      reach: row.reach === 'edge' ? 'edge' : 'agent',
      frontendId: row.frontend_id,
      target,
      mutualTls: row.mutual_tls,
      targetProtocol: row.target_protocol,
      auth: row.ap_id ? this.provider(row, secrets) : null,
      emailDomains: row.oauth_email_domains?.length ? row.oauth_email_domains : null,
      checkIntervalMs: (row.oauth_check_interval && durationMs(row.oauth_check_interval)) || DEFAULT_CHECK_INTERVAL_MS,
      inspect: row.inspect,
      policy: policies.get(row.z_id),
      affinity: row.affinity ?? 'none',
    });
    const hosts = hostsByShare.get(row.z_id);
    if (hosts) hosts.push(host);
    else hostsByShare.set(row.z_id, [host]);
  }

  private provider(row: RouteRow, secrets: Map<string, string>): ShareRoute['auth'] {
    const sealed = row.ap_client_secret_sealed!;
    let secret = secrets.get(sealed) ?? this.secrets.get(sealed);
    if (secret === undefined) {
      secret = decryptSecret(sealed);
    }
    secrets.set(sealed, secret);
    return {
      id: row.ap_id!,
      type: row.ap_type!,
      clientId: row.ap_client_id!,
      clientSecret: secret,
      issuerUrl: row.ap_issuer_url,
      scopes: row.ap_scopes ?? [],
      emailPatterns: row.ap_email_patterns ?? [],
    };
  }
}
