/** The settings of security and tenant limits, telemetry and logs, edge login (shared/settings.ts gathers every group). */
import { z } from 'zod';
import { entry, optionalString, int, optionalInt, httpUrl, duration } from './kinds.js';

export const securitySettings = {
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
