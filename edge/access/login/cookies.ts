/**
 * The edge's login cookies: payloads sealed with AES-256-GCM under a key derived by HKDF from HUB_SECRET_KEY (the
 * purpose is the additional data, so a login cookie never opens as a session), and the Set-Cookie attributes:
 * host-only (no Domain), whole host (Path=/), HttpOnly, SameSite=Lax, and Secure with the `__Host-` prefix over TLS.
 */
import { hkdfSync } from 'node:crypto';
import { open, seal } from '../../../shared/secrets.js';

export const SESSION_COOKIE = 'edgehub_session';
export const LOGIN_COOKIE = 'edgehub_login';
/** The edge's own cookies, never passed on to a target. */
export const OWN_COOKIES = new Set([SESSION_COOKIE, LOGIN_COOKIE, `__Host-${SESSION_COOKIE}`, `__Host-${LOGIN_COOKIE}`]);

/** Sealed cookie payloads: short keys keep the cookies small. */
export interface SessionPayload {
  v: 1;
  /** verified email */
  e: string;
  /** host the session is for */
  h: string;
  /** auth provider id */
  p: string;
  /** authenticated at (ms) */
  a: number;
  /** authenticate again after (ms) */
  c: number;
}

export interface LoginPayload {
  v: 1;
  /** state */
  s: string;
  /** nonce (OIDC) */
  n: string;
  /** PKCE code verifier */
  k: string;
  /** path and query to return to */
  r: string;
  h: string;
  p: string;
  /** expires at (ms) */
  x: number;
}

export function sealer(secretKey: Buffer) {
  const key = Buffer.from(hkdfSync('sha256', secretKey, 'edgehub edge login', 'session cookie v1', 32));
  return {
    /** `<iv><ciphertext><tag>` in base64url: the cookie's compact form of one shared/secrets.ts sealing. */
    seal(purpose: string, payload: object): string {
      const { iv, data, tag } = seal(key, JSON.stringify(payload), Buffer.from(purpose));
      return Buffer.concat([iv, data, tag]).toString('base64url');
    },
    open<T>(purpose: string, value: string | undefined): T | undefined {
      if (!value || value.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(value)) return undefined;
      const raw = Buffer.from(value, 'base64url');
      if (raw.length < 12 + 16 + 2) return undefined;
      try {
        const sealed = { iv: raw.subarray(0, 12), data: raw.subarray(12, raw.length - 16), tag: raw.subarray(raw.length - 16) };
        const plain = open(key, sealed, Buffer.from(purpose));
        const parsed = JSON.parse(plain.toString('utf8'));
        return parsed && typeof parsed === 'object' && parsed.v === 1 ? (parsed as T) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    // the first of two equal names is the most specific (RFC 6265 5.4); keep it
    if (name && !cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

export const cookieName = (base: string, secure: boolean) => (secure ? `__Host-${base}` : base);

export function cookie(name: string, value: string, secure: boolean, maxAgeSeconds: number): string {
  // host-only (no Domain), whole host (Path=/), never readable by scripts
  return `${name}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
