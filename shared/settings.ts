/**
 * Every setting of the service, in one zod schema: its name, type, bounds, default and a one-line description. The
 * environment is read here and nowhere else (test/system/settings.test.ts scans for reads elsewhere);
 * shared/config.ts shapes the parsed values for the code, and docs/configuration.md is generated from this list
 * (`npm run docs:settings`; a test fails when the page and the schema differ).
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { durationMs } from './durations.js';

export class ConfigError extends Error {}

export type Group =
  | 'service'
  | 'processes'
  | 'edge'
  | 'custom frontends'
  | 'IPsec'
  | 'jobs and schedules'
  | 'security and limits'
  | 'telemetry and logs'
  | 'edge login';

interface Entry<T extends z.ZodType> {
  schema: T;
  group: Group;
  description: string;
  /** The default as the documentation shows it, where the schema's own (or its absence) would mislead. */
  shown?: string;
}

const entry = <T extends z.ZodType>(schema: T, group: Group, description: string, shown?: string): Entry<T> => ({ schema, group, description, shown });

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
/** A whole number within bounds; unset or blank means the default. */
const int = (min: number, max: number, fallback: number) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.coerce.number().int().min(min).max(max).default(fallback));
const optionalInt = (min: number, max: number) =>
  optionalString.pipe(z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max)).optional());
const port = (fallback: number) => int(0, 65535, fallback);
const httpUrl = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' });
/** An ISO 8601 duration (P2D, PT12H, P1W), kept as written; checked at start so a typo does not wait for its job. */
const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine((v) => (durationMs(v) ?? 0) > 0, 'must be an ISO 8601 duration such as P2D or PT12H');
const flag = z
  .enum(['1', 'true', '0', 'false', ''])
  .optional()
  .transform((v) => v === '1' || v === 'true');
const HOST_PORT_LIST = /^(\[[0-9a-fA-F:.]+\]|[^,\s:[\]]+):\d{1,5}(,(\[[0-9a-fA-F:.]+\]|[^,\s:[\]]+):\d{1,5})*$/;
const IP_PORT_LIST = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5}(,(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5})*$/;

const SETTINGS = {
  // the service
  PORT: entry(port(8080), 'service', 'API listen port'),
  HUB_DATA_DIR: entry(
    z.string().default('.data'),
    'service',
    'where the embedded PostgreSQL and Redis keep their data, and the generated admin token and secret key',
  ),
  DATABASE_URL: entry(
    optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
        .optional(),
    ),
    'service',
    'an external PostgreSQL (`postgres://...`) instead of the embedded one',
    'embedded',
  ),
  REDIS_URL: entry(
    optionalString.pipe(
      z
        .string()
        .regex(/^rediss?:\/\//, 'must be a redis:// URL')
        .optional(),
    ),
    'service',
    'an external Redis (`redis://...`) instead of a spawned redis-server',
    'spawned',
  ),
  REDIS_SENTINELS: entry(
    optionalString.pipe(z.string().regex(HOST_PORT_LIST, 'must be comma-separated host:port, e.g. 10.0.0.5:26379,10.0.0.6:26379').optional()),
    'service',
    'Redis through Sentinel: comma-separated `host:port` of the sentinels; every Redis connection of every process follows the master they name (REDIS_URL is then not used)',
    'none',
  ),
  REDIS_SENTINEL_NAME: entry(
    z
      .string()
      .regex(/^[\w.-]+$/, 'must be a master name as the sentinels know it')
      .default('mymaster'),
    'service',
    "the master's name at the sentinels (REDIS_SENTINELS)",
  ),
  REDIS_SENTINEL_PASSWORD: entry(optionalString, 'service', "the sentinels' own password (REDIS_SENTINELS), if they require one", 'none'),
  REDIS_PASSWORD: entry(
    optionalString,
    'service',
    'with REDIS_SENTINELS, the password of the master and its replicas, if they require one (with REDIS_URL it is part of the URL)',
    'none',
  ),
  HUB_ADMIN_TOKEN: entry(
    optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
    'service',
    'operator bearer token for `/admin/*` (at least 16 characters)',
    'generated on first start, stored in `$HUB_DATA_DIR/admin-token`, printed',
  ),
  PUBLIC_BASE_URL: entry(
    optionalString.pipe(httpUrl.optional()),
    'service',
    'base URL written into enrollment JWTs (`url` claim), download commands and links',
    '`http://localhost:$PORT`',
  ),
  HUB_SECRET_KEY: entry(
    optionalString,
    'service',
    '32-byte key (64 hex digits or base64) that encrypts secrets at rest; every process of a deployment needs the same one',
    'generated on first start, stored in `$HUB_DATA_DIR/secret-key`',
  ),
  HUB_TRUST_PROXY: entry(flag, 'service', 'trust `X-Forwarded-For`/`-Proto` from a reverse proxy in front of the API (client addresses for limits and logs)'),
  HUB_SHOW_SECRETS: entry(flag, 'service', '`npm start` prints connection URLs with their passwords (same as `--show-secrets`)'),
  HUB_REDIS_MAXMEMORY: entry(
    z
      .string()
      .regex(/^\d+(kb|mb|gb)?$/i, 'must be bytes or a size such as 512mb or 2gb')
      .default('2gb'),
    'service',
    '`maxmemory` of the redis-server `npm start` spawns (its policy is `noeviction`: queue data is never evicted); keep it well above `HUB_INSPECT_TOTAL_BYTES`',
  ),

  // processes
  HUB_PROCESS: entry(
    optionalString,
    'processes',
    "the process's role in logs, metrics and database connection names; set by each process itself (web, worker, clock, edge, release)",
    "the entry point's role",
  ),
  WEB_CONCURRENCY: entry(int(1, 64, 1), 'processes', 'how many web processes `npm start` runs on the API port'),
  HUB_RESTART_BACKOFF_MS: entry(int(1, 600_000, 1000), 'processes', "`npm start`'s first wait before restarting a child that died; doubles per crash"),
  HUB_RESTART_BACKOFF_MAX_MS: entry(int(1, 3_600_000, 30_000), 'processes', "`npm start`'s longest wait before restarting a child"),
  HUB_DB_POOL_MAX: entry(int(1, 1000, 10), 'processes', "PostgreSQL connections of a process's one pool, opened on demand and closed after 10 s idle"),
  HUB_GC_THREADS: entry(
    z.enum(['auto', 'single', 'parallel']).default('auto'),
    'processes',
    "how V8 collects garbage in the processes `npm start` runs: `single` on each process's own thread (`--single-threaded-gc`), `parallel` with helper threads (Node's default); `auto` is `single` on a machine of 2 cores or fewer, where the helper threads of every process's collector compete with the service's own work (about an eighth less CPU per enrollment over the first 600 after a start, measured with bench:enroll)",
  ),
  HUB_GC_YOUNG_MB: entry(
    int(0, 16, 16),
    'processes',
    "the size, in MB, that the young generation's semi-spaces start at in the processes `npm start` runs (`--min-semi-space-size`; 0: V8's default, 1 MB, grown as the process allocates, up to 16 MB on 64-bit machines): at 16 a fresh process skips the many small collections of that growth (about 0.3 ms less CPU per enrollment over the first 600 after a start, measured with bench:enroll-outside); an idle process's memory is the same",
  ),
  HUB_EDGE_WORKERS: entry(
    optionalInt(1, 64),
    'processes',
    "processes of the edge sharing its ports (under `npm start`, children `edge.1`, `edge.2`, ...; the Procfile's `edge` forks them itself)",
    '`1`',
  ),
  HUB_EDGE_WORKER_INDEX: entry(
    optionalInt(0, 63),
    'processes',
    'set by the edge for each of its forked processes (places its metrics port); not for operators',
    'none',
  ),
  HUB_DEBUG_SERVICES: entry(flag, 'processes', "print the embedded PostgreSQL's own messages while `npm start` and `npm test` run it"),
  DEV_DNS_LISTEN: entry(
    z
      .string()
      .regex(/^[^,\s]+:\d+$/, 'must be host:port')
      .default('127.0.0.1:1053'),
    'processes',
    'where `npm run dev:dns` (a DNS server for trying custom frontends locally) listens',
  ),
  TEST_KEEP_WORK: entry(flag, 'processes', '`npm test` keeps the logs and data of its run and prints where'),
  TEST_WATCHDOG_AFTER_DONE_S: entry(
    int(10, 3600, 120),
    'processes',
    "`npm test` kills (and names, with the last lines of its log) a test process still alive this long after its file's last test and hook ended",
  ),
  TEST_WATCHDOG_STALL_S: entry(
    int(60, 7200, 480),
    'processes',
    '`npm test` kills every test process still running when its test runner has reported no result for this long (longer than the longest time a test gives itself)',
  ),
  NODE_ENV: entry(z.string().optional(), 'processes', "`development` re-reads the console's files on every request; `test` silences logs by default", 'none'),

  // the edge
  HUB_EDGE_HTTP_PORT: entry(port(8000), 'edge', "the edge's plain HTTP listener; `0` turns it off"),
  HUB_EDGE_HOST: entry(
    optionalString.refine((v) => v === undefined || isIP(v) !== 0, 'must be an IP address, e.g. 10.0.0.5 or ::'),
    'edge',
    "the address the edge's listeners bind (HTTP, TLS and every TCP share's port): several edges on one host, each on an address of its own, each listening on every TCP share's port",
    'all addresses',
  ),
  HUB_EDGE_HTTPS_PORT: entry(
    port(8443),
    'edge',
    "the edge's TLS listener (certificate chosen by SNI; ALPN `h2`, then `http/1.1`); agents dial it too; `0` turns it off",
  ),
  HUB_PUBLIC_FRONTEND_TEMPLATE: entry(
    optionalString.pipe(
      z
        .string()
        .regex(
          /^https?:\/\/\{token\}\.[a-z0-9.-]+(:\d{1,5})?\/?$/,
          'must be an http(s) URL whose host is {token}.<domain>, e.g. http://{token}.share.localhost:8000',
        )
        .optional(),
    ),
    'edge',
    "urlTemplate of the standard frontend `public`, applied at every start (existing shares' endpoints follow)",
    '`http://{token}.share.localhost:$HUB_EDGE_HTTP_PORT`',
  ),
  HUB_EDGE_AGENT_ADDRESSES: entry(
    z
      .string()
      .optional()
      .transform((v) =>
        (v ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .refine((list) => list.every((a) => /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):\d{1,5}$/.test(a)), 'must be comma-separated host:port addresses'),
    'edge',
    'comma-separated `host:port` at which agents reach this edge: handed out at enrollment and published (with liveness) for the agents of every edge',
    '`127.0.0.1:$HUB_EDGE_HTTPS_PORT`',
  ),
  HUB_EDGE_HEARTBEAT_MS: entry(
    int(100, 600_000, 5000),
    'edge',
    'how often an edge renews its row among the live edges; it stops counting as live (its agents stop dialling it) three of these after its last renewal',
  ),
  HUB_EDGE_FLUSH_MS: entry(int(10, 3_600_000, 5000), 'edge', 'how often the edge writes its byte counters as usage samples'),
  HUB_EGRESS_DENY: entry(
    z.string().default('169.254.0.0/16,fe80::/10'),
    'edge',
    "comma-separated CIDRs that share targets and health-check targets may never reach, checked on the address actually connected to (the service's own PostgreSQL, Redis, API, metrics and edge ports are denied besides; on a shared host add your private ranges: docs/security.md)",
  ),
  HUB_EDGE_TLS_CERT_FILE: entry(
    optionalString,
    'edge',
    'PEM certificate the edge serves for standard frontends (re-read when it changes)',
    "a wildcard certificate per frontend domain from the service's CA",
  ),
  HUB_EDGE_TLS_KEY_FILE: entry(optionalString, 'edge', 'the private key of `HUB_EDGE_TLS_CERT_FILE`', 'none'),
  HUB_EDGE_HEADERS_TIMEOUT_MS: entry(
    int(500, 600_000, 60_000),
    'edge',
    "how long a client may take to send a request's head over HTTP/1.1 (plain or TLS); a slower one is answered 408 and closed",
  ),
  HUB_EDGE_UPSTREAM_TIMEOUT_MS: entry(
    int(10, 3_600_000, 60_000),
    'edge',
    'how long a target may take to connect and answer with its response head before the edge answers 504',
  ),
  HUB_EDGE_UPSTREAM_READ_TIMEOUT_MS: entry(
    int(10, 3_600_000, 60_000),
    'edge',
    "the longest silence between two pieces of a target's answer body before the edge gives up on it",
  ),
  HUB_EDGE_UPGRADE_IDLE_TIMEOUT_MS: entry(int(10, 86_400_000, 600_000), 'edge', 'an upgraded (WebSocket) connection silent both ways for this long is closed'),
  HUB_EDGE_TCP_PORTS: entry(
    z
      .string()
      .default('20000-20999')
      .transform((v) => /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(v))
      .refine(
        (m) => m !== null && Number(m[1]) >= 1 && Number(m[2]) <= 65535 && Number(m[1]) <= Number(m[2]),
        'must be a port range FROM-TO such as 20000-20999',
      )
      .transform((m) => ({ from: Number(m![1]), to: Number(m![2]) })),
    'edge',
    'the port range TCP shares are given ports from, one per share while it exists (every edge listens on each)',
    '`20000-20999`',
  ),
  HUB_EDGE_HUB_MAX_CONNECTIONS: entry(
    int(1, 1_000_000, 2_000),
    'edge',
    'requests and upgraded connections in progress per hub on one edge process; more are answered 503 (TCP shares have a limit of their own)',
  ),
  HUB_EDGE_TRUSTED_PROXIES: entry(
    z.string().default(''),
    'edge',
    "comma-separated CIDRs of proxies and load balancers in front of the edge's HTTP and TLS listeners. A PROXY protocol header (v1 or v2) their connections begin with names the client, whose address the edge then uses (X-Forwarded-For, logs, share policies, HTTP/2 penalties); a connection of theirs without one is their own. A share policy's IP rules and rate limit believe the X-Forwarded-For of a connection whose address (the one a PROXY header named, else the peer's) is in this list, read from the right while each hop is listed. Nobody else may send a PROXY header, and from anyone else X-Forwarded-For is ignored",
    'none',
  ),
  HUB_EDGE_TCP_IDLE_TIMEOUT: entry(
    duration('PT10M'),
    'edge',
    "a TCP share's connection with no byte either way for this long is closed (ISO 8601 duration); a share's own `tcpIdleTimeout` overrides it",
  ),
  HUB_EDGE_TCP_MAX_CONNECTIONS: entry(
    int(1, 1_000_000, 1_000),
    'edge',
    "open connections per TCP share on one edge process (in their TLS handshake or carried); more are closed at once. Apart from `HUB_EDGE_HUB_MAX_CONNECTIONS`: a TCP share's connections never make the hub's HTTP shares answer 503",
  ),
  HUB_EDGE_RESYNC_MS: entry(
    int(0, 86_400_000, 60_000),
    'edge',
    'a full reload of routes and certificates this often, besides change notifications (`0`: only after a reconnect)',
  ),
  HUB_EDGE_PENDING_MAX_ROWS: entry(
    int(100, 10_000_000, 100_000),
    'edge',
    'usage rows the edge keeps while PostgreSQL is unreachable; beyond it the oldest are dropped and logged',
  ),
  HUB_INSPECT_MAX: entry(int(1, 100_000, 200), 'edge', 'exchanges kept per inspected share (the newest)'),
  HUB_INSPECT_TTL: entry(duration('PT24H'), 'edge', 'exchanges of inspected shares older than this are gone (ISO 8601 duration)'),
  HUB_INSPECT_BODY_BYTES: entry(
    int(0, 16 * 1024 * 1024, 65_536),
    'edge',
    'bytes of each request and response body an inspected exchange keeps (the rest is counted, flagged `bodyTruncated`)',
  ),
  HUB_INSPECT_QUEUE: entry(
    int(1, 1_000_000, 10_000),
    'edge',
    'finished exchanges an edge holds for its Redis writer (and at most 64 MiB of them); beyond it they are dropped and counted',
  ),
  HUB_INSPECT_HUB_BYTES: entry(
    int(0, 1_000_000_000_000, 64 * 1024 * 1024),
    'edge',
    'bytes of recorded exchanges one hub keeps over all its shares, each share its part (this divided by `HUB_INSPECT_HUB_SHARES`): a share that records trims its own oldest; a batch that still does not fit is dropped and counted',
    '67108864 (64 MiB)',
  ),
  HUB_INSPECT_HUB_SHARES: entry(
    int(1, 1_000_000, 8),
    'edge',
    'shares of one hub that may hold recorded exchanges at once (each keeps at most its part of `HUB_INSPECT_HUB_BYTES`); the exchanges of another are dropped and counted until one is deleted or its recordings expire',
  ),
  HUB_INSPECT_TOTAL_BYTES: entry(
    int(0, 1_000_000_000_000, 512 * 1024 * 1024),
    'edge',
    "bytes of recorded exchanges all hubs keep together in Redis: keep it well under Redis's `maxmemory` (see `HUB_REDIS_MAXMEMORY`)",
    '536870912 (512 MiB)',
  ),
  HUB_INSPECT_REDACT_HEADERS: entry(
    z.string().default('x-api-key,api-key,x-auth-token,x-access-token,x-amz-security-token,x-csrf-token,x-xsrf-token,private-token'),
    'edge',
    'comma-separated header names whose values inspection replaces by `[redacted]`, besides Authorization, Proxy-Authorization, Cookie, Set-Cookie and the client certificate headers (always); case-insensitive',
  ),
  HUB_INSPECT_REDACT_PARAMS: entry(
    z
      .string()
      .default(
        'access_token,refresh_token,id_token,token,api_key,apikey,api-key,key,client_secret,secret,password,passwd,pwd,x-amz-security-token,x-amz-signature,x-amz-credential,signature,sig',
      ),
    'edge',
    'comma-separated names of query parameters (the recorded path, `Referer`, `Location`) and `application/x-www-form-urlencoded` body fields whose values inspection replaces by `[redacted]`; case-insensitive',
  ),
  HUB_INSPECT_REPLAYS: entry(int(1, 10_000, 8), 'edge', 'replays one edge process carries out at once'),
  HUB_INSPECT_REPLAYS_PER_HUB: entry(
    int(1, 10_000, 4),
    'edge',
    "replays of one hub one edge process carries out at once: the other hubs' replays are taken first, round robin, while a hub is at it",
  ),
  HUB_INSPECT_LIVE_MAX: entry(
    int(1, 100_000, 5),
    'security and limits',
    'live request streams (`/requests/live`) one API key may hold open at once, over every web process; 429 past it',
  ),
  HUB_INSPECT_LIVE_HUB_MAX: entry(
    int(1, 1_000_000, 20),
    'security and limits',
    "live request streams one hub's keys may hold open at once, over every web process; 429 past it",
  ),
  HUB_INSPECT_LIVE_PROCESS_MAX: entry(int(1, 1_000_000, 1000), 'security and limits', 'live request streams one web process holds open at once; 429 past it'),
  HUB_INSPECT_LIVE_LIFETIME: entry(
    duration('PT30M'),
    'security and limits',
    "the longest a live request stream stays open; then it ends and the client's EventSource reconnects with Last-Event-ID (ISO 8601 duration)",
  ),

  // custom frontends and certificates
  HUB_DNS_SERVERS: entry(
    optionalString.pipe(z.string().regex(IP_PORT_LIST, 'must be comma-separated ip:port pairs (IPv6 as [addr]:port)').optional()),
    'custom frontends',
    'comma-separated `ip:port` resolvers the custom-frontend DNS checks ask',
    'system resolvers',
  ),
  HUB_DNS_CHECK_INTERVAL_MS: entry(int(10, 3_600_000, 30_000), 'custom frontends', "how often a PENDING custom frontend's DNS records are checked"),
  HUB_DNS_WAIT: entry(
    duration('PT72H'),
    'custom frontends',
    'how long a NEW or PENDING custom frontend holds its hostname waiting for DNS before it becomes ERROR',
  ),
  HUB_INGRESS_ADDRESSES: entry(
    z
      .string()
      .regex(/^\d{1,3}(\.\d{1,3}){3}(,\d{1,3}(\.\d{1,3}){3})*$/, 'must be comma-separated IPv4 addresses')
      .default('203.0.113.10,203.0.113.11'),
    'custom frontends',
    "the addresses a custom frontend's A record must name (the edge's public addresses)",
  ),
  HUB_VALIDATION_DOMAIN: entry(
    z
      .string()
      .regex(/^[a-z0-9.-]+$/, 'must be a DNS name')
      .default('validation.edgehub.localhost'),
    'custom frontends',
    'the zone that certificate-validation CNAMEs point into',
  ),
  HUB_VALIDATION_DNS_LISTEN: entry(
    optionalString.pipe(
      z
        .string()
        .regex(/^[^,\s]+:\d+$/, 'must be host:port')
        .optional(),
    ),
    'custom frontends',
    'where this service answers DNS for the validation zone (DNS-01 TXT records)',
    'off',
  ),
  HUB_ACME_DIRECTORY_URL: entry(
    optionalString.pipe(httpUrl.optional()),
    'custom frontends',
    'an ACME CA that issues custom frontend certificates',
    "the service's own CA",
  ),
  HUB_ACME_CA_FILE: entry(optionalString, 'custom frontends', "a PEM file of CAs to trust for the ACME CA's own TLS", 'system CAs'),
  HUB_ACME_CONTACT: entry(optionalString, 'custom frontends', 'the contact email of the ACME account', 'none'),
  HUB_CERTIFICATE_RENEW_BEFORE_DAYS: entry(
    int(1, 365, 30),
    'custom frontends',
    'a custom frontend certificate is renewed when it expires within this many days',
  ),
  HUB_PROVISION_DELAY_MS: entry(int(0, 600_000, 1500), 'custom frontends', 'how long the local provisioner takes per step (custom frontends and IPsec)'),

  // IPsec
  HUB_VPC_CIDR: entry(z.string().default('10.100.0.0/16'), 'IPsec', 'address range the IPsec provider allocates load-balancer addresses from'),
  HUB_IPSEC_PROVIDER: entry(
    z.enum(['strongswan', 'simulated']).optional(),
    'IPsec',
    '`strongswan`: real IKEv2 tunnels run by the edge; `simulated`: addresses and keys only',
    '`strongswan` as root with strongSwan installed, else `simulated`',
  ),
  HUB_IPSEC_WAN_NETNS: entry(
    optionalString,
    'IPsec',
    "a network namespace standing for the internet: tunnels' outside addresses are routed there",
    'none (on the host)',
  ),

  // jobs and schedules
  HUB_QUEUE_PREFIX: entry(
    z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .default('edgehub'),
    'jobs and schedules',
    'BullMQ and lock key prefix (lets several deployments share one Redis)',
  ),
  HUB_JOB_BACKOFF_MS: entry(
    int(10, 600_000, 1_000),
    'jobs and schedules',
    "the wait before a failed job's first retry; it doubles with each of its five attempts",
  ),
  HUB_JOB_LOCK_MS: entry(
    int(1000, 3_600_000, 8_000),
    'jobs and schedules',
    "a job's lock duration: a dead worker's jobs are taken over within this plus the stalled interval",
  ),
  HUB_STALLED_INTERVAL_MS: entry(int(500, 3_600_000, 4_000), 'jobs and schedules', 'how often workers look for jobs whose worker died'),
  HUB_ISSUANCE_WAIT_MS: entry(
    int(1, 600_000, 30_000),
    'jobs and schedules',
    'how long a request waits for its issuance or key rotation job (Redis connection included) before answering 503; the job still completes',
  ),
  HUB_SWEEP_CRON: entry(
    z.string().default('*/15 * * * * *'),
    'jobs and schedules',
    'how often the clock re-adds jobs Redis never received and reconciles executions an outage left unfinished',
  ),
  HUB_KEY_ROTATION_CRON: entry(z.string().default('0 0 1 * *'), 'jobs and schedules', 'when the clock rotates the enrollment-JWT signing key'),
  HUB_CRL_REFRESH: entry(
    duration('PT12H'),
    'jobs and schedules',
    "how often each CA's CRL is signed anew at the least (a revocation signs it at once); its nextUpdate is this plus one hour, and OCSP answers are signed for the same span",
  ),
  HUB_CERTIFICATE_RENEWAL_CRON: entry(
    z.string().default('0 17 * * * *'),
    'jobs and schedules',
    'when the clock looks for custom frontend and edge certificates to renew',
  ),
  HUB_HEALTH_CHECK_RECONCILE_CRON: entry(
    z.string().default('30 * * * * *'),
    'jobs and schedules',
    'when the clock reconciles the scheduled health checks with their settings',
  ),
  HUB_METRICS_RAW_RETENTION: entry(duration('P2D'), 'jobs and schedules', 'how long raw usage samples are kept'),
  HUB_SCHEDULED_EXECUTION_RETENTION: entry(
    duration('P7D'),
    'jobs and schedules',
    'how long finished executions that the clock or a scheduler started are kept (those a person or key caused are kept for good)',
  ),

  // security and tenant limits
  HUB_AUTH_FAILURE_LIMIT: entry(
    int(0, 10_000_000, 100),
    'security and limits',
    'failed authentications (401) one client address may cause per window before it gets 429; `0` turns it off',
  ),
  HUB_AUTH_FAILURE_WINDOW_SECONDS: entry(int(1, 86_400, 60), 'security and limits', 'the window of `HUB_AUTH_FAILURE_LIMIT`'),
  HUB_UNAUTH_RATE_LIMIT: entry(
    int(0, 10_000_000, 20_000),
    'security and limits',
    "requests per window one client address may send to the unauthenticated routes (enroll, token-in-path, agent enrollment and renewal, JWKS, the CAs' CRLs, certificates and OCSP under `/pki/`); `0` turns it off",
  ),
  HUB_UNAUTH_RATE_WINDOW_SECONDS: entry(int(1, 86_400, 60), 'security and limits', 'the window of `HUB_UNAUTH_RATE_LIMIT`'),
  HUB_TOKEN_MAX_TTL: entry(
    duration('P90D'),
    'security and limits',
    'the longest lifetime a certificate request token (and so its JWT and signing key) may be given',
  ),
  HUB_SIGNING_KEY_CACHE_MS: entry(
    int(0, 600_000, 5_000),
    'security and limits',
    'how long a web process trusts its copy of a verification key, the JWKS, or a kid it did not find',
  ),
  HUB_DB_STATEMENT_TIMEOUT_MS: entry(
    int(0, 3_600_000, 60_000),
    'security and limits',
    'the longest one SQL statement may run (PostgreSQL statement_timeout); `0` turns it off',
  ),
  HUB_DB_ACQUIRE_TIMEOUT_MS: entry(
    int(50, 600_000, 5_000),
    'security and limits',
    "the longest a request waits for a connection of its process's pool before it is answered 503 with Retry-After",
  ),
  HUB_AGENT_CERT_VALIDITY: entry(
    duration('P365D'),
    'security and limits',
    "how long an agent's certificate is valid (ISO 8601 duration); a running agent renews it once a third of that is left",
  ),
  HUB_DB_LISTEN_PING_MS: entry(
    int(100, 600_000, 10_000),
    'security and limits',
    'how often a process checks that its change-notification connection (revocations, routes, API keys) still answers; one silent for half of that is dropped and made again, and the process reads everything anew',
  ),
  HUB_HEALTH_CHECK_MIN_INTERVAL_SECONDS: entry(int(1, 86_400, 30), 'security and limits', 'the shortest interval a scheduled health check may have'),
  HUB_MAX_SCHEDULED_HEALTH_CHECKS: entry(int(0, 1_000_000, 100), 'security and limits', 'scheduled health checks per hub'),
  HUB_MAX_SHARES: entry(
    int(0, 1_000_000, 1000),
    'security and limits',
    "shares per hub, unless the operator set the hub's own (`quotas.shares`, `PATCH /admin/v1/hubs/{hubId}`); TCP shares count too",
  ),
  HUB_MAX_TCP_PORTS: entry(
    int(0, 65_535, 20),
    'security and limits',
    "TCP shares per hub, each holding one port of `HUB_EDGE_TCP_PORTS`, unless the operator set the hub's own (`quotas.tcpPorts`)",
  ),
  HUB_MAX_LIST_OFFSET: entry(int(0, 100_000_000, 10_000), 'security and limits', 'how many rows deep a list page may start (400 beyond)'),
  HUB_PKI_CACHE_MAX: entry(
    int(1, 1_000_000, 1000),
    'security and limits',
    'entries of the PKI caches (decrypted hub CA keys, issuer chains, verification keys, OCSP responders)',
  ),
  HUB_PKI_CACHE_TTL: entry(duration('PT10M'), 'security and limits', 'how long an entry of the PKI caches is kept'),
  HUB_SPARKLINES_MAX_SHARES: entry(int(1, 100_000, 1000), 'security and limits', 'most shares one sparklines response carries (more are paged)'),

  // telemetry and logs
  LOG_LEVEL: entry(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
    'telemetry and logs',
    'pino level of the lines written to stdout',
    '`info` (`silent` under `NODE_ENV=test`)',
  ),
  HUB_LOG_DIR: entry(
    optionalString,
    'telemetry and logs',
    "also write each process's log lines to `<role>-<pid>.log` in this folder (the test command sets it)",
    'none',
  ),
  HUB_LOG_FILE_LEVEL: entry(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('debug'),
    'telemetry and logs',
    'pino level of the lines written under `HUB_LOG_DIR`',
  ),
  HUB_METRICS_PORT: entry(
    optionalInt(0, 65535),
    'telemetry and logs',
    "a separate Prometheus listener per process (`GET /metrics`, no authentication: keep it private); the edge's forked processes take the following ports",
    'off',
  ),
  HUB_METRICS_HOST: entry(z.string().default('127.0.0.1'), 'telemetry and logs', 'the address of the `HUB_METRICS_PORT` listener'),
  HUB_METRICS_PORTS: entry(
    optionalString.pipe(
      z
        .string()
        .regex(/^\d{1,5}-\d{1,5}$/, 'must be a port range FROM-TO')
        .transform((v) => v.split('-').map(Number))
        .refine(([from, to]) => from >= 1 && to <= 65535 && from <= to, 'must be a port range FROM-TO within 1-65535')
        .transform(([from, to]) => ({ from, to }))
        .optional(),
    ),
    'telemetry and logs',
    'set by `npm start` for each of its children: the metrics ports of all of them (no share target may reach one); not for operators',
    'none',
  ),

  // edge login
  HUB_GOOGLE_ISSUER_URL: entry(
    httpUrl.default('https://accounts.google.com'),
    'edge login',
    "GOOGLE auth providers' OIDC issuer (tests and air-gapped set-ups point it elsewhere)",
  ),
  HUB_GITHUB_OAUTH_URL: entry(httpUrl.default('https://github.com'), 'edge login', "GITHUB auth providers' OAuth base"),
  HUB_GITHUB_API_URL: entry(httpUrl.default('https://api.github.com'), 'edge login', "GITHUB auth providers' API base (the account's emails)"),
};

type Settings = typeof SETTINGS;
export type SettingName = keyof Settings;
export type SettingsValues = { [K in SettingName]: z.output<Settings[K]['schema']> };

const schema = z.object(Object.fromEntries(Object.entries(SETTINGS).map(([name, e]) => [name, e.schema])) as { [K in SettingName]: Settings[K]['schema'] });

/** The settings from `env`, validated; a ConfigError names each bad one. */
export function readSettings(env: NodeJS.ProcessEnv = process.env): SettingsValues {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return parsed.data as SettingsValues;
}

/**
 * One setting, read now, falling back to its default when it is missing or invalid: for what must work before the
 * whole configuration is known to be valid (the logger that reports a bad configuration, the process's role).
 */
export function setting<K extends SettingName>(name: K, env: NodeJS.ProcessEnv = process.env): SettingsValues[K] {
  const e = SETTINGS[name];
  const parsed = e.schema.safeParse(env[name]);
  return (parsed.success ? parsed.data : e.schema.safeParse(undefined).data) as SettingsValues[K];
}

/**
 * Gives a setting a value for this process and the processes it starts, unless the environment already has one:
 * e.g. each process's role (HUB_PROCESS), which a parent that started it may have named already.
 */
export function presetSetting(name: SettingName, value: string): void {
  process.env[name] ??= value;
}

/** The settings page: one table per group, each setting with its meaning and default. */
export function settingsMarkdown(): string {
  const groups = new Map<Group, string[]>();
  for (const [name, e] of Object.entries(SETTINGS) as [SettingName, Entry<z.ZodType>][]) {
    const fallback = e.shown ?? shownDefault(e.schema);
    const rows = groups.get(e.group) ?? [];
    rows.push(`| \`${name}\` | ${e.description} | ${fallback} |`);
    groups.set(e.group, rows);
  }
  return [...groups]
    .map(([group, rows]) => [`### ${group[0].toUpperCase()}${group.slice(1)}`, '', '| variable | meaning | default |', '|---|---|---|', ...rows].join('\n'))
    .join('\n\n');
}

function shownDefault(s: z.ZodType): string {
  const parsed = s.safeParse(undefined);
  if (!parsed.success || parsed.data === undefined || (Array.isArray(parsed.data) && parsed.data.length === 0)) return 'none';
  return `\`${String(parsed.data)}\``;
}
