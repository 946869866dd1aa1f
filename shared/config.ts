import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { durationMs } from './durations.js';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** An ISO 8601 duration (P2D, PT12H, P1W), kept as written; checked at start so a typo does not wait for its job. */
const retention = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine((v) => (durationMs(v) ?? 0) > 0, 'must be an ISO 8601 duration such as P2D or PT12H');

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HUB_DATA_DIR: z.string().default('.data'),
  DATABASE_URL: optionalString.pipe(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional()),
  REDIS_URL: optionalString.pipe(z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional()),
  HUB_ADMIN_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  PUBLIC_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional()),
  HUB_SECRET_KEY: optionalString,
  HUB_PROVISION_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(1500),
  HUB_DNS_SERVERS: optionalString.pipe(
    z
      .string()
      // Node's resolver takes IP addresses only: a host name here would make every lookup fail
      .regex(/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5}(,(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d{1,5})*$/, 'must be comma-separated ip:port pairs (IPv6 as [addr]:port)')
      .optional(),
  ),
  HUB_DNS_CHECK_INTERVAL_MS: z.coerce.number().int().min(10).max(3_600_000).default(30_000),
  HUB_INGRESS_ADDRESSES: z.string().regex(/^\d{1,3}(\.\d{1,3}){3}(,\d{1,3}(\.\d{1,3}){3})*$/, 'must be comma-separated IPv4 addresses').default('203.0.113.10,203.0.113.11'),
  HUB_VALIDATION_DOMAIN: z.string().regex(/^[a-z0-9.-]+$/, 'must be a DNS name').default('validation.edgehub.localhost'),
  HUB_ACME_DIRECTORY_URL: optionalString.pipe(z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional()),
  HUB_ACME_CA_FILE: optionalString,
  HUB_ACME_CONTACT: optionalString,
  HUB_VALIDATION_DNS_LISTEN: optionalString.pipe(z.string().regex(/^[^,\s]+:\d+$/, 'must be host:port').optional()),
  HUB_CERTIFICATE_RENEW_BEFORE_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  HUB_QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+$/).default('edgehub'),
  HUB_SWEEP_CRON: z.string().default('*/15 * * * * *'),
  HUB_KEY_ROTATION_CRON: z.string().default('0 0 1 * *'),
  HUB_VPC_CIDR: z.string().default('10.100.0.0/16'),
  HUB_METRICS_RAW_RETENTION: retention('P2D'),
  HUB_SCHEDULED_EXECUTION_RETENTION: retention('P7D'),
  HUB_SPARKLINES_MAX_SHARES: z.coerce.number().int().min(1).max(100_000).default(1000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface Config {
  port: number;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  adminToken: string;
  publicBaseUrl: string;
  secretKey: Buffer;
  provisionDelayMs: number;
  dnsServers: string[];
  queuePrefix: string;
  /** Custom frontends: how often a PENDING frontend's DNS records are checked, the ingress addresses its A record
   * must name, and the zone the certificate-validation CNAMEs point into. */
  dnsCheckIntervalMs: number;
  ingressAddresses: string[];
  validationDomain: string;
  /** ACME issuance of custom frontend certificates (the local CA when unset): directory, a CA file to trust for
   * its TLS, a contact email, and where this process answers DNS for the validation zone (DNS-01 TXT records). */
  acme?: { directoryUrl: string; caFile?: string; contact?: string };
  validationDnsListen?: string;
  /** A custom frontend certificate is renewed when it expires within this many days. */
  certificateRenewBeforeDays: number;
  sweepCron: string;
  keyRotationCron: string;
  vpcCidr: string;
  metricsRawRetention: string;
  scheduledExecutionRetention: string;
  /** Most shares one sparklines response carries (a page); more are paged. */
  sparklinesMaxShares: number;
  logLevel: string;
}

export class ConfigError extends Error {}

function decodeSecretKey(raw: string): Buffer {
  const candidates = [/^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : undefined, Buffer.from(raw, 'base64')];
  const key = candidates.find((b) => b && b.length === 32);
  if (!key) throw new ConfigError('HUB_SECRET_KEY: must be 32 bytes, written as 64 hex digits or base64');
  return key;
}

/** Reads a generated secret from the data dir, creating it once (exclusive create, so concurrent starts agree). */
function storedSecret(dataDir: string, file: string, generate: () => string): string {
  const full = path.join(dataDir, file);
  try {
    return readFileSync(full, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(full, generate() + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return readFileSync(full, 'utf8').trim();
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  const dataDir = path.resolve(e.HUB_DATA_DIR);
  const adminToken = e.HUB_ADMIN_TOKEN ?? storedSecret(dataDir, 'admin-token', () => randomBytes(24).toString('base64url'));
  const secretKey = decodeSecretKey(
    e.HUB_SECRET_KEY ?? storedSecret(dataDir, 'secret-key', () => randomBytes(32).toString('hex')),
  );
  return {
    port: e.PORT,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    adminToken,
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    secretKey,
    provisionDelayMs: e.HUB_PROVISION_DELAY_MS,
    dnsServers: e.HUB_DNS_SERVERS ? e.HUB_DNS_SERVERS.split(',') : [],
    queuePrefix: e.HUB_QUEUE_PREFIX,
    dnsCheckIntervalMs: e.HUB_DNS_CHECK_INTERVAL_MS,
    ingressAddresses: e.HUB_INGRESS_ADDRESSES.split(','),
    validationDomain: e.HUB_VALIDATION_DOMAIN,
    acme: e.HUB_ACME_DIRECTORY_URL ? { directoryUrl: e.HUB_ACME_DIRECTORY_URL, caFile: e.HUB_ACME_CA_FILE, contact: e.HUB_ACME_CONTACT } : undefined,
    validationDnsListen: e.HUB_VALIDATION_DNS_LISTEN,
    certificateRenewBeforeDays: e.HUB_CERTIFICATE_RENEW_BEFORE_DAYS,
    sweepCron: e.HUB_SWEEP_CRON,
    keyRotationCron: e.HUB_KEY_ROTATION_CRON,
    vpcCidr: e.HUB_VPC_CIDR,
    metricsRawRetention: e.HUB_METRICS_RAW_RETENTION,
    scheduledExecutionRetention: e.HUB_SCHEDULED_EXECUTION_RETENTION,
    sparklinesMaxShares: e.HUB_SPARKLINES_MAX_SHARES,
    logLevel: e.LOG_LEVEL,
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
