import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { durationMs } from './durations.js';
import { strongswanRuns } from './ipsec/strongswan.js';
import { ConfigError, readSettings } from './settings.js';
import { storedSecret } from './storedSecret.js';

export { ConfigError };

/** The process configuration: its shape and types are loadConfig's, whose values have the settings schema's types. */
export type Config = ReturnType<typeof loadConfig>;
/** Request inspection's bounds (HUB_INSPECT_*). */
export type InspectConfig = Config['inspect'];
/** The security limits (throttles, token lifetimes, key caching, statement time). */
export type SecurityConfig = Config['security'];

function decodeSecretKey(raw: string): Buffer {
  const candidates = [/^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : undefined, Buffer.from(raw, 'base64')];
  const key = candidates.find((b) => b && b.length === 32);
  if (!key) throw new ConfigError('HUB_SECRET_KEY: must be 32 bytes, written as 64 hex digits or base64');
  return key;
}

/** A comma-separated list of names, lower-cased, blanks left out. */
const nameList = (raw: string): string[] =>
  raw
    .split(',')
    .map((n) => n.trim().toLowerCase())
    .filter(Boolean);

function parseCidrList(raw: string, name = 'HUB_EGRESS_DENY'): string[] {
  const list = raw
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  for (const cidr of list) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      throw new ConfigError(`${name}: '${cidr}' is not a CIDR such as 169.254.0.0/16 or fe80::/10`);
    }
  }
  return list;
}

/** `host:port,host:port` (IPv6 in brackets) as host and port pairs. */
function hostPorts(list: string): { host: string; port: number }[] {
  return list.split(',').map((item) => {
    const at = item.lastIndexOf(':');
    return { host: item.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(item.slice(at + 1)) };
  });
}

/**
 * The process configuration from the settings (shared/settings.ts): each value's type is the schema's, grouped and
 * computed where a reader wants it so (durations in ms, lists split, defaults that depend on other settings).
 */
export function loadConfig(env?: NodeJS.ProcessEnv) {
  const e = readSettings(env);
  const dataDir = path.resolve(e.HUB_DATA_DIR);
  const adminToken = e.HUB_ADMIN_TOKEN ?? storedSecret(dataDir, 'admin-token', () => randomBytes(24).toString('base64url'));
  const secretKey = decodeSecretKey(e.HUB_SECRET_KEY ?? storedSecret(dataDir, 'secret-key', () => randomBytes(32).toString('hex')));
  return {
    port: e.PORT,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    /** Redis through Sentinel (REDIS_SENTINELS), which every connection then uses instead of redisUrl. */
    redisSentinel: e.REDIS_SENTINELS
      ? { sentinels: hostPorts(e.REDIS_SENTINELS), name: e.REDIS_SENTINEL_NAME, sentinelPassword: e.REDIS_SENTINEL_PASSWORD, password: e.REDIS_PASSWORD }
      : undefined,
    adminToken,
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    secretKey,
    provisionDelayMs: e.HUB_PROVISION_DELAY_MS,
    dnsServers: e.HUB_DNS_SERVERS ? e.HUB_DNS_SERVERS.split(',') : [],
    queuePrefix: e.HUB_QUEUE_PREFIX,
    /**
     * Custom frontends: how often a PENDING frontend's DNS records are checked, the ingress addresses its A record
     * must name, and the zone the certificate-validation CNAMEs point into.
     */
    dnsCheckIntervalMs: e.HUB_DNS_CHECK_INTERVAL_MS,
    /** How long a NEW or PENDING custom frontend holds its hostname waiting for DNS before it becomes ERROR (ms). */
    dnsWaitMs: durationMs(e.HUB_DNS_WAIT)!,
    ingressAddresses: e.HUB_INGRESS_ADDRESSES.split(','),
    validationDomain: e.HUB_VALIDATION_DOMAIN,
    /**
     * ACME issuance of custom frontend certificates (the local CA when unset): directory, a CA file to trust for its
     * TLS, a contact email, and where this process answers DNS for the validation zone (DNS-01 TXT records).
     */
    acme: e.HUB_ACME_DIRECTORY_URL ? { directoryUrl: e.HUB_ACME_DIRECTORY_URL, caFile: e.HUB_ACME_CA_FILE, contact: e.HUB_ACME_CONTACT } : undefined,
    validationDnsListen: e.HUB_VALIDATION_DNS_LISTEN,
    /** A custom frontend certificate is renewed when it expires within this many days. */
    certificateRenewBeforeDays: e.HUB_CERTIFICATE_RENEW_BEFORE_DAYS,
    sweepCron: e.HUB_SWEEP_CRON,
    keyRotationCron: e.HUB_KEY_ROTATION_CRON,
    vpcCidr: e.HUB_VPC_CIDR,
    /** IPsec: real tunnels on strongSwan, or addresses and keys only. */
    ipsec: {
      provider: e.HUB_IPSEC_PROVIDER ?? (strongswanRuns() ? ('strongswan' as const) : ('simulated' as const)),
      chosen: e.HUB_IPSEC_PROVIDER ? ('HUB_IPSEC_PROVIDER' as const) : ('detected' as const),
      wanNetns: e.HUB_IPSEC_WAN_NETNS,
    },
    metricsRawRetention: e.HUB_METRICS_RAW_RETENTION,
    scheduledExecutionRetention: e.HUB_SCHEDULED_EXECUTION_RETENTION,
    /** Most shares one sparklines response carries (a page); more are paged. */
    sparklinesMaxShares: e.HUB_SPARKLINES_MAX_SHARES,
    logLevel: e.LOG_LEVEL ?? (e.NODE_ENV === 'test' ? 'silent' : 'info'),
    /** The edge (data plane); a port of 0 turns its listener off. */
    edge: {
      httpPort: e.HUB_EDGE_HTTP_PORT,
      httpsPort: e.HUB_EDGE_HTTPS_PORT,
      /** The address every listener of the edge binds (HUB_EDGE_HOST); undefined: all. */
      host: e.HUB_EDGE_HOST,
      /** urlTemplate of the standard frontend `public`, applied at every start (migrate). */
      publicFrontendTemplate: e.HUB_PUBLIC_FRONTEND_TEMPLATE ?? `http://{token}.share.localhost:${e.HUB_EDGE_HTTP_PORT}`,
      flushMs: e.HUB_EDGE_FLUSH_MS,
      /** HUB_EDGE_HEARTBEAT_MS: liveness renewal among the edges; expiry after three missed. */
      heartbeatMs: e.HUB_EDGE_HEARTBEAT_MS,
      /** CIDRs no share target or health-check target may reach (checked on the address actually connected to). */
      egressDeny: parseCidrList(e.HUB_EGRESS_DENY),
      tlsCertFile: e.HUB_EDGE_TLS_CERT_FILE,
      /** HUB_EDGE_AGENT_ADDRESSES: what agents are told to dial (default 127.0.0.1:httpsPort). */
      agentAddresses: e.HUB_EDGE_AGENT_ADDRESSES.length ? e.HUB_EDGE_AGENT_ADDRESSES : [`127.0.0.1:${e.HUB_EDGE_HTTPS_PORT}`],
      /** Whether HUB_EDGE_AGENT_ADDRESSES was set (else the edge publishes the port its TLS listener actually took). */
      agentAddressesGiven: e.HUB_EDGE_AGENT_ADDRESSES.length > 0,
      tlsKeyFile: e.HUB_EDGE_TLS_KEY_FILE,
      /** How long a target may take to connect and answer with its response head before the edge answers 504. */
      upstreamTimeoutMs: e.HUB_EDGE_UPSTREAM_TIMEOUT_MS,
      /** How long a client may take to send a request's head (HTTP/1.1). */
      headersTimeoutMs: e.HUB_EDGE_HEADERS_TIMEOUT_MS,
      /** Longest silence between two pieces of a target's answer body before the edge gives up on it (nginx: proxy_read_timeout). */
      upstreamReadTimeoutMs: e.HUB_EDGE_UPSTREAM_READ_TIMEOUT_MS,
      /** An upgraded (WebSocket) connection silent both ways for this long is closed. */
      upgradeIdleTimeoutMs: e.HUB_EDGE_UPGRADE_IDLE_TIMEOUT_MS,
      /** Requests and upgraded connections in progress per hub on one edge process; more are answered 503. */
      hubMaxConnections: e.HUB_EDGE_HUB_MAX_CONNECTIONS,
      /** HUB_EDGE_TRUSTED_PROXIES: load balancers whose connections begin with a PROXY protocol header. */
      trustedProxies: parseCidrList(e.HUB_EDGE_TRUSTED_PROXIES, 'HUB_EDGE_TRUSTED_PROXIES'),
      /** HUB_EDGE_TCP_IDLE_TIMEOUT: a TCP share's connection with no byte either way for this long is closed (unless the share says otherwise). */
      tcpIdleTimeoutMs: durationMs(e.HUB_EDGE_TCP_IDLE_TIMEOUT)!,
      /** HUB_EDGE_TCP_MAX_CONNECTIONS: open connections per TCP share on one edge process. */
      tcpMaxConnections: e.HUB_EDGE_TCP_MAX_CONNECTIONS,
      /** HUB_EDGE_TCP_PORTS: the ports TCP shares are given, one each, while they exist. */
      tcpPorts: e.HUB_EDGE_TCP_PORTS,
      /** A full reload of the routes this often, besides change notifications (0 = only on reconnect). */
      resyncMs: e.HUB_EDGE_RESYNC_MS,
      /** Usage rows kept while PostgreSQL is away; beyond this the oldest are dropped (and logged). */
      pendingMaxRows: e.HUB_EDGE_PENDING_MAX_ROWS,
      /** Edge processes sharing the edge's ports: forked by the edge itself (Procfile), or children of npm start. */
      workers: e.HUB_EDGE_WORKERS ?? 1,
    },
    /** The security limits: per-address throttles, token lifetimes, key caching, statement time. */
    security: {
      authFailureLimit: e.HUB_AUTH_FAILURE_LIMIT,
      authFailureWindowSeconds: e.HUB_AUTH_FAILURE_WINDOW_SECONDS,
      unauthRateLimit: e.HUB_UNAUTH_RATE_LIMIT,
      unauthRateWindowSeconds: e.HUB_UNAUTH_RATE_WINDOW_SECONDS,
      tokenMaxTtl: e.HUB_TOKEN_MAX_TTL,
      tokenMaxTtlMs: durationMs(e.HUB_TOKEN_MAX_TTL)!,
      signingKeyCacheMs: e.HUB_SIGNING_KEY_CACHE_MS,
      statementTimeoutMs: e.HUB_DB_STATEMENT_TIMEOUT_MS,
      acquireTimeoutMs: e.HUB_DB_ACQUIRE_TIMEOUT_MS,
      /** How often a LISTEN connection is checked; silent for half of it, it is dropped and made again. */
      listenPingMs: e.HUB_DB_LISTEN_PING_MS,
      /** How long an agent's certificate is valid. */
      agentCertValidityMs: durationMs(e.HUB_AGENT_CERT_VALIDITY)!,
    },
    /** Trust X-Forwarded-For/-Proto from a reverse proxy in front of the API. */
    trustProxy: e.HUB_TRUST_PROXY,
    /** PostgreSQL connections of this process's one pool. */
    dbPoolMax: e.HUB_DB_POOL_MAX,
    /** How long a request waits for its issuance or rotation job before answering 503. */
    issuanceWaitMs: e.HUB_ISSUANCE_WAIT_MS,
    /** HUB_CRL_REFRESH: the longest a CA's CRL goes unsigned (ms); its nextUpdate is this plus CRL_MARGIN_MS. */
    crlRefreshMs: durationMs(e.HUB_CRL_REFRESH)!,
    /** BullMQ takeover of a dead worker's jobs: lock duration and stalled-job check interval. */
    takeover: { lockDuration: e.HUB_JOB_LOCK_MS, stalledInterval: e.HUB_STALLED_INTERVAL_MS },
    /** HUB_JOB_BACKOFF_MS: the first retry wait of a failed job (doubling). */
    jobBackoffMs: e.HUB_JOB_BACKOFF_MS,
    certificateRenewalCron: e.HUB_CERTIFICATE_RENEWAL_CRON,
    healthCheckReconcileCron: e.HUB_HEALTH_CHECK_RECONCILE_CRON,
    /** A separate Prometheus listener of this process (undefined: off). */
    metricsListener: e.HUB_METRICS_PORT === undefined ? undefined : { port: e.HUB_METRICS_PORT, host: e.HUB_METRICS_HOST },
    /** HUB_METRICS_PORTS: the metrics ports of every process npm start runs (each is told all of them). */
    metricsPorts: e.HUB_METRICS_PORTS,
    /** npm start: web processes, the Node flags of the processes it runs (HUB_GC_THREADS, HUB_GC_YOUNG_MB), its restart back-off of dead children. */
    webConcurrency: e.WEB_CONCURRENCY,
    nodeFlags: [...gcFlags(e.HUB_GC_THREADS), ...youngGenerationFlags(e.HUB_GC_YOUNG_MB)],
    /** npm start: the edge's node flags on top of those (HUB_GC_EDGE_OLD_MB). */
    edgeNodeFlags: oldGenerationFlags(e.HUB_GC_EDGE_OLD_MB),
    restartBackoff: { minMs: e.HUB_RESTART_BACKOFF_MS, maxMs: e.HUB_RESTART_BACKOFF_MAX_MS },
    showSecrets: e.HUB_SHOW_SECRETS,
    /** Request inspection: what is kept, its bounds per share, hub and in all, what is redacted, replays and live streams. */
    inspect: {
      /** Exchanges kept per share (count, age), bytes of each body kept, the capture queue per edge. */
      max: e.HUB_INSPECT_MAX,
      ttlMs: durationMs(e.HUB_INSPECT_TTL)!,
      bodyBytes: e.HUB_INSPECT_BODY_BYTES,
      queue: e.HUB_INSPECT_QUEUE,
      /** Bytes per hub, shares with recordings per hub, bytes over all hubs. */
      hubBytes: e.HUB_INSPECT_HUB_BYTES,
      hubShares: e.HUB_INSPECT_HUB_SHARES,
      totalBytes: e.HUB_INSPECT_TOTAL_BYTES,
      /** Lower-cased names: headers redacted besides the credentials, query and form parameters redacted. */
      redactHeaders: nameList(e.HUB_INSPECT_REDACT_HEADERS),
      redactParams: nameList(e.HUB_INSPECT_REDACT_PARAMS),
      /** Replays at once per edge process, and per hub on it. */
      replays: e.HUB_INSPECT_REPLAYS,
      replaysPerHub: e.HUB_INSPECT_REPLAYS_PER_HUB,
      /** Live streams per key and per hub (over every web process), per web process, and their longest life. */
      live: {
        perKey: e.HUB_INSPECT_LIVE_MAX,
        perHub: e.HUB_INSPECT_LIVE_HUB_MAX,
        perProcess: e.HUB_INSPECT_LIVE_PROCESS_MAX,
        lifetimeMs: durationMs(e.HUB_INSPECT_LIVE_LIFETIME)!,
      },
    },
    /** Edge login: GOOGLE's issuer, GitHub's OAuth and API bases. */
    login: { googleIssuerUrl: e.HUB_GOOGLE_ISSUER_URL, githubOAuthUrl: e.HUB_GITHUB_OAUTH_URL, githubApiUrl: e.HUB_GITHUB_API_URL },
    /** Entries and lifetime (ms) of the PKI caches (decrypted hub CA keys, issuer chains, verification keys, OCSP responders). */
    pkiCacheMax: e.HUB_PKI_CACHE_MAX,
    pkiCacheTtlMs: durationMs(e.HUB_PKI_CACHE_TTL)!,
    /**
     * Tenant quotas: the shortest health-check interval, scheduled checks per hub, the deepest list offset (rows); the
     * shares and TCP shares (ports) a hub may hold when the operator set none of its own.
     */
    quotas: {
      healthCheckMinIntervalSeconds: e.HUB_HEALTH_CHECK_MIN_INTERVAL_SECONDS,
      scheduledHealthChecksPerHub: e.HUB_MAX_SCHEDULED_HEALTH_CHECKS,
      maxListOffset: e.HUB_MAX_LIST_OFFSET,
      sharesPerHub: e.HUB_MAX_SHARES,
      tcpPortsPerHub: e.HUB_MAX_TCP_PORTS,
    },
  };
}

let current: Config | undefined;

/** The process configuration, read from the environment on first use. */
export function config(): Config {
  current ??= loadConfig();
  return current;
}

/** For tests and the start script: forget the cached configuration so the next call re-reads the environment. */
export function resetConfig(): void {
  current = undefined;
}

/**
 * The garbage collector's flags for a service process: single-threaded when asked, or on a machine of 2 cores or
 * fewer (`auto`), where each process's collector helpers only take turns with the service's own threads.
 */
export function gcFlags(mode: 'auto' | 'single' | 'parallel', cores = os.availableParallelism()): string[] {
  return mode === 'single' || (mode === 'auto' && cores <= 2) ? ['--single-threaded-gc'] : [];
}

/**
 * The young generation's starting size for a service process (HUB_GC_YOUNG_MB): V8 starts its semi-spaces at 1 MB and
 * doubles them as the process allocates, collecting each time one fills; a fresh process serving requests reaches the
 * 16 MB limit within seconds anyway, after a few hundred small collections. 0: V8's default.
 */
export function youngGenerationFlags(mb: number): string[] {
  return mb > 0 ? [`--min-semi-space-size=${mb}`] : [];
}

/**
 * The old generation's starting size for the edge (HUB_GC_EDGE_OLD_MB). Each socket read allocates a 64 KiB buffer
 * that V8 counts as external memory until a scavenge frees it (up to twice the young generation's semi-space, 32 MB,
 * of them dead at a time); with the few tens of MB an edge's heap holds, that count passes what is left under the old
 * generation's limit every few hundred MB carried, and each time a full marking runs on the edge's thread. Started
 * at 80 MB the limit leaves that room, but the old generation then holds more garbage between markings, which makes
 * each scavenge of an HTTP/2 load dearer: a choice for edges that carry mostly bytes. 0: V8's default.
 */
export function oldGenerationFlags(mb: number): string[] {
  return mb > 0 ? [`--initial-old-space-size=${mb}`] : [];
}
