/** The settings of the edge (shared/settings.ts gathers every group). */
import { isIP } from 'node:net';
import { z } from 'zod';
import { entry, optionalString, int, port, duration } from './kinds.js';

export const edgeSettings = {
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
    "comma-separated CIDRs of proxies and load balancers in front of the edge's HTTP and TLS listeners. A PROXY protocol header (v1 or v2) their connections begin with names the client, whose address the edge then uses (X-Forwarded-For, logs, share policies, HTTP/2 penalties); a connection of theirs without one is their own. A share policy's IP rules and rate limit, and `client-ip` agent affinity, believe the X-Forwarded-For of a connection whose address (the one a PROXY header named, else the peer's) is in this list, read from the right while each hop is listed. Nobody else may send a PROXY header, and from anyone else X-Forwarded-For is ignored",
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
};
