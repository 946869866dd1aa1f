import { z } from 'zod';
import { ConfigError } from './config.js';
import { durationMs } from './durations.js';

/**
 * The security limits (README "Security"), read from the environment on each call (each app creation), so that a
 * test can set tight values. Kept apart from shared/config.ts so the limits live in one place.
 */
const count = (fallback: number) => z.coerce.number().int().min(0).max(10_000_000).default(fallback);
const seconds = (fallback: number) => z.coerce.number().int().min(1).max(86_400).default(fallback);

const schema = z.object({
  /** Failed authentications (401) one client address may cause per window before it gets 429; 0 turns it off. */
  HUB_AUTH_FAILURE_LIMIT: count(100),
  HUB_AUTH_FAILURE_WINDOW_SECONDS: seconds(60),
  /** Requests per window one client address may send to the unauthenticated routes (enroll, token-in-path, JWKS). */
  HUB_UNAUTH_RATE_LIMIT: count(20_000),
  HUB_UNAUTH_RATE_WINDOW_SECONDS: seconds(60),
  /** The longest lifetime a certificate request token (and so its JWT and signing key) may be given. */
  HUB_TOKEN_MAX_TTL: z
    .string()
    .default('P90D')
    .refine((v) => (durationMs(v) ?? 0) > 0, 'must be an ISO 8601 duration such as P90D'),
  /** How long a web process trusts its copy of a verification key, the JWKS, or a kid it did not find. */
  HUB_SIGNING_KEY_CACHE_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
  /** The longest one SQL statement may run (PostgreSQL statement_timeout); 0 turns it off. */
  HUB_DB_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  /** The longest a request waits for a connection of its process's pool before it is answered 503 with Retry-After. */
  HUB_DB_ACQUIRE_TIMEOUT_MS: z.coerce.number().int().min(50).max(600_000).default(5_000),
});

export interface SecurityConfig {
  authFailureLimit: number;
  authFailureWindowSeconds: number;
  unauthRateLimit: number;
  unauthRateWindowSeconds: number;
  tokenMaxTtl: string;
  tokenMaxTtlMs: number;
  signingKeyCacheMs: number;
  statementTimeoutMs: number;
  acquireTimeoutMs: number;
}

export function securityConfig(env: NodeJS.ProcessEnv = process.env): SecurityConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration:\n  ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n  ')}`);
  }
  const e = parsed.data;
  return {
    authFailureLimit: e.HUB_AUTH_FAILURE_LIMIT,
    authFailureWindowSeconds: e.HUB_AUTH_FAILURE_WINDOW_SECONDS,
    unauthRateLimit: e.HUB_UNAUTH_RATE_LIMIT,
    unauthRateWindowSeconds: e.HUB_UNAUTH_RATE_WINDOW_SECONDS,
    tokenMaxTtl: e.HUB_TOKEN_MAX_TTL,
    tokenMaxTtlMs: durationMs(e.HUB_TOKEN_MAX_TTL) as number,
    signingKeyCacheMs: e.HUB_SIGNING_KEY_CACHE_MS,
    statementTimeoutMs: e.HUB_DB_STATEMENT_TIMEOUT_MS,
    acquireTimeoutMs: e.HUB_DB_ACQUIRE_TIMEOUT_MS,
  };
}
