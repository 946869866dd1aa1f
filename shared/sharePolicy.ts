/**
 * A share's traffic policy as it is stored (the shares row's `policy` column) and as the API shows it. Basic auth
 * passwords are stored as scrypt hashes (node:crypto) and never shown: a share answer lists its users only.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { HOP_BY_HOP } from './hopByHop.js';

export interface HeaderRules {
  set?: Record<string, string>;
  remove?: string[];
}

interface RateLimitRule {
  requests: number;
  /** ISO 8601 duration, e.g. PT1M. */
  per: string;
  /** What is counted: the client address, or the authenticated identity (certificate, login email; else the address). */
  by: 'client-ip' | 'identity';
}

interface PolicyFields {
  ipAllow?: string[];
  ipDeny?: string[];
  rateLimit?: RateLimitRule;
  requestHeaders?: HeaderRules;
  responseHeaders?: HeaderRules;
  errorPages?: Partial<Record<'502' | '503' | '504', string>>;
  maintenance?: boolean;
}

/** As given to the API: basic auth users with their passwords (a PATCH may leave out the password of a kept user). */
export interface PolicyInput extends PolicyFields {
  basicAuth?: { user: string; password?: string }[];
}

/** As stored: basic auth users with password hashes. */
export interface StoredPolicy extends PolicyFields {
  basicAuth?: { user: string; hash: string }[];
}

/** As shown: basic auth users only. */
interface PolicyView extends PolicyFields {
  basicAuth?: { user: string }[];
}

/** The largest error page, in bytes of UTF-8. */
export const ERROR_PAGE_MAX_BYTES = 64 * 1024;

const N = 16384;
const R = 8;
const P = 1;
const KEY_BYTES = 32;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_BYTES, { N: n, r, p, maxmem: 128 * n * r * 2 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$key` (base64). */
async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Whether `password` matches a hash made by hashPassword (false for anything unreadable). */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const parts = hash.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4], 'base64');
  const expected = Buffer.from(parts[5], 'base64');
  if (!n || !r || !p || expected.length !== KEY_BYTES) return false;
  const key = await derive(password, salt, n, r, p);
  return timingSafeEqual(key, expected);
}

/** The policy as a share answer shows it: `{}` when none, basic auth users without their hashes. */
export function policyView(stored: StoredPolicy | null | undefined): PolicyView {
  if (!stored) return {};
  const { basicAuth, ...rest } = stored;
  return basicAuth ? { ...rest, basicAuth: basicAuth.map(({ user }) => ({ user })) } : rest;
}

/**
 * The policy to store from what the API was given: passwords hashed; a user given without a password keeps the hash
 * it has in `previous` (undefined when it has none: the caller refuses it). An empty policy is stored as null.
 */
export async function storedPolicy(input: PolicyInput, previous: StoredPolicy | null | undefined): Promise<StoredPolicy | null | { missingPassword: string }> {
  const { basicAuth, ...rest } = input;
  const out: StoredPolicy = { ...rest };
  if (basicAuth) {
    const users: { user: string; hash: string }[] = [];
    for (const { user, password } of basicAuth) {
      if (password === undefined) {
        const kept = previous?.basicAuth?.find((u) => u.user === user);
        if (!kept) return { missingPassword: user };
        users.push(kept);
      } else users.push({ user, hash: await hashPassword(password) });
    }
    out.basicAuth = users;
  }
  return Object.keys(out).length ? out : null;
}

/**
 * Header names a policy may neither set nor remove: the edge's own (forwarding, the identities it verified, its hop
 * mark and error code), framing and hop-by-hop fields, and Host. Compared in lower case.
 */
const PROTECTED_NAMES = new Set([
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-email',
  'x-client-certificate-name',
  'x-client-certificate-fingerprint',
  'forwarded',
  'via',
  'edgehub-error-code',
  'host',
  'content-length',
  ...HOP_BY_HOP,
]);

export function isProtectedHeader(name: string): boolean {
  const n = name.toLowerCase();
  return PROTECTED_NAMES.has(n) || n.startsWith('x-forwarded-') || n.startsWith('x-client-certificate-') || n.startsWith(':');
}
