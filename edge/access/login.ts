/**
 * Login for shares with an auth provider (CONTRACT.md, "The edge", Login).
 *
 * OIDC and GOOGLE: authorization code flow with PKCE, endpoints by discovery from the issuer (openid-client), the ID
 * token verified again with jose (signature against the issuer's JWKS, iss, aud, exp, nonce); the email comes from
 * the ID token or, when the provider keeps it for userinfo, from the userinfo endpoint, and must be verified.
 * GITHUB: GitHub's OAuth endpoints (with PKCE) and the account's verified primary email (GET /user/emails).
 *
 * The browser's state: a short-lived login cookie (state, nonce, PKCE verifier, where to return) and, after the
 * callback, a session cookie (email, host, provider, when to authenticate again). Both are sealed with AES-256-GCM
 * under a key derived by HKDF from HUB_SECRET_KEY, host-only (no Domain), HttpOnly, SameSite=Lax, and Secure (with
 * the `__Host-` prefix) over TLS. The session names its host, so a cookie copied to another share's host is refused.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRemoteJWKSet, customFetch as joseFetch, jwtVerify, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { config } from '../../shared/config.js';
import { egressFetch } from '../../shared/egressHttp.js';
import type { LoginProvider, ShareRoute } from '../types.js';

export type LoginOutcome = { kind: 'pass'; email: string } | { kind: 'handled' };

export interface LoginEndpoints {
  /** Issuer of type GOOGLE (discovery at <issuer>/.well-known/openid-configuration). */
  googleIssuerUrl: string;
  /** Base of GitHub's OAuth endpoints (/login/oauth/authorize, /login/oauth/access_token). */
  githubOAuthUrl: string;
  /** Base of GitHub's REST API (/user/emails). */
  githubApiUrl: string;
}

export interface LoginOptions {
  /** HUB_SECRET_KEY; the cookie key is derived from it with HKDF. */
  secretKey: Buffer;
  /** Where GOOGLE and GITHUB live; default: the operator settings (HUB_GOOGLE_ISSUER_URL, HUB_GITHUB_*). */
  endpoints?: Partial<LoginEndpoints>;
  /** How long a started login may take (the login cookie's lifetime); default 10 minutes. */
  loginTimeoutMs?: number;
  /** Timeout of each request to an identity provider; default 10 s. */
  providerTimeoutMs?: number;
}

export const CALLBACK_PATH = '/.edgehub/oauth/callback';
export const LOGOUT_PATH = '/.edgehub/logout';
const SESSION_COOKIE = 'edgehub_session';
const LOGIN_COOKIE = 'edgehub_login';
const OWN_COOKIES = new Set([SESSION_COOKIE, LOGIN_COOKIE, `__Host-${SESSION_COOKIE}`, `__Host-${LOGIN_COOKIE}`]);
const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile'];
const DEFAULT_GITHUB_SCOPES = ['read:user', 'user:email'];
const METADATA_TTL_MS = 60 * 60 * 1000;

/** Sealed cookie payloads: short keys keep the cookies small. */
interface SessionPayload {
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

interface LoginPayload {
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

class LoginRefusal extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 502,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

const refuse = (message: string) => new LoginRefusal(403, 'forbidden', message);

// ---------- sealing ----------

function sealer(secretKey: Buffer) {
  const key = Buffer.from(hkdfSync('sha256', secretKey, 'edgehub edge login', 'session cookie v1', 32));
  return {
    seal(purpose: string, payload: object): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(purpose));
      const data = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
      return Buffer.concat([iv, data, cipher.getAuthTag()]).toString('base64url');
    },
    open<T>(purpose: string, value: string | undefined): T | undefined {
      if (!value || value.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(value)) return undefined;
      const raw = Buffer.from(value, 'base64url');
      if (raw.length < 12 + 16 + 2) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
        decipher.setAAD(Buffer.from(purpose));
        decipher.setAuthTag(raw.subarray(raw.length - 16));
        const plain = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
        const parsed = JSON.parse(plain.toString('utf8'));
        return parsed && typeof parsed === 'object' && parsed.v === 1 ? (parsed as T) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

// ---------- cookies ----------

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

const cookieName = (base: string, secure: boolean) => (secure ? `__Host-${base}` : base);

function cookie(name: string, value: string, secure: boolean, maxAgeSeconds: number): string {
  // host-only (no Domain), whole host (Path=/), never readable by scripts
  return `${name}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

// ---------- email rules ----------

/** `*@example.com` (or any pattern with a leading `*`) matches by suffix; anything else is an exact address. */
export function emailMatches(email: string, patterns: string[]): boolean {
  const address = email.toLowerCase();
  return patterns.some((raw) => {
    const pattern = raw.trim().toLowerCase();
    if (!pattern) return false;
    if (pattern.startsWith('*')) return address.endsWith(pattern.slice(1));
    return address === pattern;
  });
}

/** The share's oauthEmailDomains: `example.com`, `@example.com` or `*@example.com`, compared with the email's domain. */
export function domainMatches(email: string, domains: string[]): boolean {
  const domain = email.toLowerCase().split('@').pop() ?? '';
  return domains.some((d) => d.trim().toLowerCase().replace(/^\*?@/, '') === domain);
}

/** Why an email may not reach the share, or undefined when it may. An empty pattern list restricts nothing. */
function emailRefusal(email: string, route: ShareRoute): string | undefined {
  const provider = route.auth as LoginProvider;
  if (provider.emailPatterns.length && !emailMatches(email, provider.emailPatterns)) return `${email} is not allowed by the auth provider's email patterns`;
  if (route.emailDomains?.length && !domainMatches(email, route.emailDomains)) return `${email} is not in the share's email domains`;
  return undefined;
}

// ---------- providers ----------

const isLoopback = (url: URL) => /^(localhost|.*\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(url.hostname);

/** https everywhere; http only for a provider on this machine (tests, local development). */
function providerUrl(raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new LoginRefusal(502, 'bad_gateway', `${what} is not a URL: ${raw}`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) throw new LoginRefusal(502, 'bad_gateway', `${what} must use https: ${raw}`);
  return url;
}

interface Metadata {
  metadata: oidc.ServerMetadata;
  at: number;
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');
const equalStrings = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

function isBrowser(req: IncomingMessage): boolean {
  return /\btext\/html\b/i.test(String(req.headers.accept ?? ''));
}

/** Only a same-origin path may be returned to. */
function returnPath(req: IncomingMessage): string {
  const url = req.url ?? '/';
  if (req.method !== 'GET' && req.method !== 'HEAD') return '/';
  if (!url.startsWith('/') || url.startsWith('//') || url.startsWith('/\\') || url.startsWith(CALLBACK_PATH) || url.startsWith(LOGOUT_PATH)) return '/';
  return url;
}

export function createLogin(options: LoginOptions) {
  const sealed = sealer(options.secretKey);
  const loginTimeoutMs = options.loginTimeoutMs ?? 10 * 60 * 1000;
  const providerTimeoutMs = options.providerTimeoutMs ?? 10_000;
  const metadataCache = new Map<string, Promise<Metadata>>();
  const jwksCache = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
  /** state -> expiry: a callback URL is good once per process (the provider also refuses a second use of a code) */
  const usedStates = new Map<string, number>();

  const endpoints = (): LoginEndpoints => {
    const configured = options.endpoints ?? {};
    const fallback = () => config().login;
    return {
      googleIssuerUrl: configured.googleIssuerUrl ?? fallback().googleIssuerUrl,
      githubOAuthUrl: configured.githubOAuthUrl ?? fallback().githubOAuthUrl,
      githubApiUrl: configured.githubApiUrl ?? fallback().githubApiUrl,
    };
  };

  const issuerOf = (provider: LoginProvider): string => {
    if (provider.type === 'GOOGLE') return endpoints().googleIssuerUrl;
    if (!provider.issuerUrl) throw new LoginRefusal(502, 'bad_gateway', 'the auth provider has no issuer URL');
    return provider.issuerUrl;
  };

  /** Discovery, cached per issuer for an hour (a failed discovery is not cached). */
  async function configuration(provider: LoginProvider): Promise<oidc.Configuration> {
    const issuer = providerUrl(issuerOf(provider), 'the issuer URL').href;
    let entry = metadataCache.get(issuer);
    if (entry) {
      const settled = await entry.catch(() => undefined);
      if (!settled || Date.now() - settled.at > METADATA_TTL_MS) entry = undefined;
    }
    if (!entry) {
      entry = (async () => {
        const discovered = await oidc.discovery(new URL(issuer), provider.clientId, undefined, undefined, {
          execute: new URL(issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
          timeout: providerTimeoutMs / 1000,
          // every request to an identity provider goes through the egress policy (shared/egressHttp.ts)
          [oidc.customFetch]: egressFetch as oidc.CustomFetch,
        });
        return { metadata: discovered.serverMetadata() as oidc.ServerMetadata, at: Date.now() };
      })();
      metadataCache.set(issuer, entry);
      entry.catch(() => metadataCache.delete(issuer));
    }
    let metadata: Metadata;
    try {
      metadata = await entry;
    } catch (err) {
      throw new LoginRefusal(502, 'bad_gateway', `the identity provider's discovery failed: ${message(err)}`);
    }
    const methods = metadata.metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
    const auth = methods.includes('client_secret_basic') ? oidc.ClientSecretBasic(provider.clientSecret) : oidc.ClientSecretPost(provider.clientSecret);
    const c = new oidc.Configuration(metadata.metadata, provider.clientId, provider.clientSecret, auth);
    c.timeout = providerTimeoutMs / 1000;
    c[oidc.customFetch] = egressFetch as oidc.CustomFetch;
    if (new URL(issuer).protocol === 'http:') oidc.allowInsecureRequests(c);
    return c;
  }

  function jwksOf(jwksUri: string) {
    let jwks = jwksCache.get(jwksUri);
    if (!jwks) {
      jwks = createRemoteJWKSet(providerUrl(jwksUri, 'the jwks_uri'), { timeoutDuration: providerTimeoutMs, [joseFetch]: egressFetch as never });
      jwksCache.set(jwksUri, jwks);
    }
    return jwks;
  }

  const scopesOf = (provider: LoginProvider) => {
    if (provider.type === 'GITHUB') return [...new Set([...(provider.scopes.length ? provider.scopes : DEFAULT_GITHUB_SCOPES), 'user:email'])];
    const scopes = provider.scopes.length ? provider.scopes : DEFAULT_OIDC_SCOPES;
    return [...new Set(['openid', ...scopes, 'email'])];
  };

  /** Starts a login: a sealed login cookie and the provider's authorization URL. */
  async function begin(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: { host: string; secure: boolean; origin: string }) {
    const provider = route.auth as LoginProvider;
    const state = randomBytes(24).toString('base64url');
    const nonce = randomBytes(24).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const redirectUri = ctx.origin + CALLBACK_PATH;
    let location: URL;
    if (provider.type === 'GITHUB') {
      location = new URL('/login/oauth/authorize', providerUrl(endpoints().githubOAuthUrl, 'the GitHub OAuth URL'));
      location.search = new URLSearchParams({
        client_id: provider.clientId,
        redirect_uri: redirectUri,
        scope: scopesOf(provider).join(' '),
        state,
        code_challenge: s256(verifier),
        code_challenge_method: 'S256',
        allow_signup: 'false',
      }).toString();
    } else {
      location = oidc.buildAuthorizationUrl(await configuration(provider), {
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: scopesOf(provider).join(' '),
        state,
        nonce,
        code_challenge: s256(verifier),
        code_challenge_method: 'S256',
      });
    }
    const flow: LoginPayload = { v: 1, s: state, n: nonce, k: verifier, r: returnPath(req), h: ctx.host, p: provider.id, x: Date.now() + loginTimeoutMs };
    res.statusCode = 302;
    res.setHeader('location', location.href);
    res.setHeader('cache-control', 'no-store');
    res.setHeader('set-cookie', cookie(cookieName(LOGIN_COOKIE, ctx.secure), sealed.seal(LOGIN_COOKIE, flow), ctx.secure, loginTimeoutMs / 1000));
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>Sign in</title><a href="${escapeHtml(location.href)}">Sign in</a>\n`);
  }

  /** The provider's answer: checks state against the login cookie, exchanges the code, and reads a verified email. */
  async function callback(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: { host: string; secure: boolean; origin: string }) {
    const provider = route.auth as LoginProvider;
    const loginCookie = cookieName(LOGIN_COOKIE, ctx.secure);
    const clearLogin = cookie(loginCookie, '', ctx.secure, 0);
    const current = new URL(req.url ?? '/', ctx.origin);
    const flow = sealed.open<LoginPayload>(LOGIN_COOKIE, parseCookies(req.headers.cookie).get(loginCookie));
    const state = current.searchParams.get('state') ?? '';
    try {
      if (!flow || flow.x < Date.now()) throw refuse('no login is in progress in this browser (or it took too long); open the share again to sign in');
      if (flow.h !== ctx.host || flow.p !== provider.id) throw refuse('the login was started for another share or provider; open the share again to sign in');
      if (!state || !equalStrings(state, flow.s)) throw refuse('the login state does not match this browser; open the share again to sign in');
      if (usedStates.has(state)) throw refuse('this login response was already used; open the share again to sign in');
      remember(state, flow.x);
      const providerError = current.searchParams.get('error');
      if (providerError) throw refuse(`the identity provider refused the login: ${providerError}${current.searchParams.get('error_description') ? ` (${current.searchParams.get('error_description')})` : ''}`);
      const email = provider.type === 'GITHUB' ? await githubEmail(provider, current, flow, ctx) : await oidcEmail(provider, current, flow);
      const refusal = emailRefusal(email, route);
      if (refusal) throw refuse(refusal);
      const now = Date.now();
      const session: SessionPayload = { v: 1, e: email, h: ctx.host, p: provider.id, a: now, c: now + route.checkIntervalMs };
      res.statusCode = 302;
      res.setHeader('location', flow.r);
      res.setHeader('cache-control', 'no-store');
      res.setHeader('set-cookie', [cookie(cookieName(SESSION_COOKIE, ctx.secure), sealed.seal(SESSION_COOKIE, session), ctx.secure, route.checkIntervalMs / 1000), clearLogin]);
      res.end();
    } catch (err) {
      res.setHeader('set-cookie', clearLogin);
      throw err;
    }
  }

  function remember(state: string, until: number) {
    const now = Date.now();
    if (usedStates.size > 10_000) for (const [s, x] of usedStates) if (x < now) usedStates.delete(s);
    usedStates.set(state, until);
  }

  async function oidcEmail(provider: LoginProvider, current: URL, flow: LoginPayload): Promise<string> {
    const c = await configuration(provider);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(c, current, { pkceCodeVerifier: flow.k, expectedState: flow.s, expectedNonce: flow.n, idTokenExpected: true });
    } catch (err) {
      throw providerFailure(err);
    }
    const idToken = tokens.id_token;
    if (!idToken) throw refuse('the identity provider returned no ID token');
    // the ID token once more with jose: signature by the issuer's keys, iss, aud, exp and our nonce
    const metadata = c.serverMetadata();
    if (!metadata.jwks_uri) throw new LoginRefusal(502, 'bad_gateway', 'the identity provider publishes no jwks_uri');
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(idToken, jwksOf(metadata.jwks_uri), { issuer: metadata.issuer, audience: provider.clientId, requiredClaims: ['exp', 'iat', 'sub', 'nonce'] }));
    } catch (err) {
      throw refuse(`the ID token did not verify: ${message(err)}`);
    }
    if (claims.nonce !== flow.n) throw refuse('the ID token was issued for another login (nonce)');
    let email = claims.email;
    let verified = claims.email_verified;
    if (typeof email !== 'string' && metadata.userinfo_endpoint) {
      try {
        const info = await oidc.fetchUserInfo(c, tokens.access_token, claims.sub as string);
        email = info.email;
        verified = info.email_verified;
      } catch (err) {
        throw providerFailure(err);
      }
    }
    if (typeof email !== 'string' || !email.includes('@')) throw refuse('the identity provider did not share an email address (is the email scope allowed?)');
    if (verified !== true && verified !== 'true') throw refuse(`the identity provider does not confirm that ${email} is verified`);
    return email.toLowerCase();
  }

  async function githubEmail(provider: LoginProvider, current: URL, flow: LoginPayload, ctx: { origin: string }): Promise<string> {
    const code = current.searchParams.get('code');
    if (!code) throw refuse('the login response carries no code');
    const { githubOAuthUrl, githubApiUrl } = endpoints();
    const tokenUrl = new URL('/login/oauth/access_token', providerUrl(githubOAuthUrl, 'the GitHub OAuth URL'));
    const token = await fetchJson(tokenUrl, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: provider.clientId, client_secret: provider.clientSecret, code, redirect_uri: ctx.origin + CALLBACK_PATH, code_verifier: flow.k }).toString(),
    });
    if (typeof token.access_token !== 'string') throw refuse(`GitHub refused the login: ${String(token.error ?? 'no access token')}${token.error_description ? ` (${String(token.error_description)})` : ''}`);
    const emailsUrl = new URL('user/emails', providerUrl(githubApiUrl.replace(/\/?$/, '/'), 'the GitHub API URL'));
    const emails = await fetchJson(emailsUrl, {
      headers: { accept: 'application/vnd.github+json', authorization: `Bearer ${token.access_token}`, 'user-agent': 'edgehub-edge', 'x-github-api-version': '2022-11-28' },
    });
    if (!Array.isArray(emails)) throw new LoginRefusal(502, 'bad_gateway', 'GitHub did not list the account emails');
    const primary = emails.find((e: { primary?: boolean }) => e && e.primary === true) as { email?: string; verified?: boolean } | undefined;
    if (!primary || typeof primary.email !== 'string') throw refuse('the GitHub account has no primary email');
    if (primary.verified !== true) throw refuse(`the GitHub account's primary email ${primary.email} is not verified`);
    return primary.email.toLowerCase();
  }

  async function fetchJson(url: URL, init: RequestInit): Promise<any> {
    let res: Response;
    try {
      res = await egressFetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(providerTimeoutMs) });
    } catch (err) {
      throw new LoginRefusal(502, 'bad_gateway', `the identity provider could not be reached: ${message(err)}`);
    }
    const text = await res.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      throw new LoginRefusal(502, 'bad_gateway', `the identity provider answered ${res.status} without JSON`);
    }
    if (!res.ok && !(body && typeof body === 'object' && 'error' in body)) throw new LoginRefusal(502, 'bad_gateway', `the identity provider answered ${res.status}`);
    return body;
  }

  function logout(req: IncomingMessage, res: ServerResponse, ctx: { secure: boolean; host: string }) {
    res.statusCode = 200;
    res.setHeader('cache-control', 'no-store');
    res.setHeader('set-cookie', [cookie(cookieName(SESSION_COOKIE, ctx.secure), '', ctx.secure, 0), cookie(cookieName(LOGIN_COOKIE, ctx.secure), '', ctx.secure, 0)]);
    if (isBrowser(req)) {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><title>Signed out</title><p>You are signed out of ${escapeHtml(ctx.host)}.</p>\n`);
    } else {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ status: 'logged_out', message: `signed out of ${ctx.host}` }));
    }
  }

  /** The session of this request, when it is sealed by us, for this host and provider, and not due for a check. */
  function sessionOf(req: IncomingMessage, route: ShareRoute, ctx: { host: string; secure: boolean }): SessionPayload | undefined {
    const value = parseCookies(req.headers.cookie).get(cookieName(SESSION_COOKIE, ctx.secure));
    const session = sealed.open<SessionPayload>(SESSION_COOKIE, value);
    if (!session || typeof session.e !== 'string') return undefined;
    if (session.h !== ctx.host || session.p !== route.auth?.id) return undefined;
    const now = Date.now();
    if (now >= session.c || now >= session.a + route.checkIntervalMs) return undefined;
    return session;
  }

  return {
    async handle(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: { host: string; secure: boolean; origin: string }): Promise<LoginOutcome> {
      if (!route.auth) return { kind: 'pass', email: '' };
      const path = (req.url ?? '/').split('?')[0];
      try {
        if (path === LOGOUT_PATH) {
          logout(req, res, ctx);
          return { kind: 'handled' };
        }
        if (path === CALLBACK_PATH) {
          await callback(req, res, route, ctx);
          return { kind: 'handled' };
        }
        const session = sessionOf(req, route, ctx);
        if (session) {
          const refusal = emailRefusal(session.e, route);
          if (refusal) throw refuse(refusal);
          return { kind: 'pass', email: session.e };
        }
        if (!isBrowser(req)) throw new LoginRefusal(401, 'unauthorized', 'this share requires login: open it in a browser, or send the session cookie of a login');
        await begin(req, res, route, ctx);
        return { kind: 'handled' };
      } catch (err) {
        const refusal = err instanceof LoginRefusal ? err : new LoginRefusal(502, 'bad_gateway', `login failed: ${message(err)}`);
        if (!res.headersSent) {
          res.statusCode = refusal.status;
          res.setHeader('content-type', 'application/json');
          res.setHeader('cache-control', 'no-store');
          res.end(JSON.stringify({ error: refusal.error, message: refusal.message }));
        }
        return { kind: 'handled' };
      }
    },

    allows(email: string, route: ShareRoute): boolean {
      return !route.auth || emailRefusal(email, route) === undefined;
    },

    /** The Cookie header without the edge's own cookies (undefined when nothing is left). */
    stripCookies(cookieHeader: string | undefined): string | undefined {
      if (!cookieHeader) return cookieHeader;
      const kept = cookieHeader
        .split(';')
        .map((p) => p.trim())
        .filter((p) => p && !OWN_COOKIES.has(p.slice(0, Math.max(0, p.indexOf('='))).trim()));
      return kept.length ? kept.join('; ') : undefined;
    },
  };
}

function providerFailure(err: unknown): LoginRefusal {
  if (err instanceof LoginRefusal) return err;
  const e = err as { error?: string; error_description?: string; code?: string; cause?: { error?: string; error_description?: string } };
  const error = e.error ?? e.cause?.error;
  if (error) return refuse(`the identity provider refused the login: ${error}${(e.error_description ?? e.cause?.error_description) ? ` (${e.error_description ?? e.cause?.error_description})` : ''}`);
  if (e.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || e.code === 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' || e.code === 'OAUTH_INVALID_RESPONSE') return refuse(`the identity provider's answer did not verify: ${message(err)}`);
  return new LoginRefusal(502, 'bad_gateway', `the identity provider could not complete the login: ${message(err)}`);
}

function message(err: unknown): string {
  const e = err as Error & { cause?: Error & { code?: string } };
  const text = e?.cause && e.cause.message && e.cause.message !== e.message ? `${e.message} (${e.cause.code ?? e.cause.message})` : (e?.message ?? String(err));
  return text.replace(/\s+/g, ' ').trim();
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
