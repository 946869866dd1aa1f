/**
 * Login for shares with an auth provider: the flow at the share's own host.
 *
 * A browser without a session is sent to the provider (login/providers.ts) with a short-lived login cookie (state,
 * nonce, PKCE verifier, where to return); the callback checks them, asks the provider for the verified email, checks
 * it against the provider's patterns and the share's domains (login/emailRules.ts), and sets the session cookie
 * (email, host, provider, when to authenticate again). Both cookies are sealed (login/cookies.ts) and name their
 * host, so a cookie copied to another share's host is refused.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answer } from '../../answers.js';
import type { LoginProvider, ShareRoute } from '../../types.js';
import type { LoginContext } from '../types.js';
import { cookie, cookieName, LOGIN_COOKIE, OWN_COOKIES, parseCookies, sealer, SESSION_COOKIE, type LoginPayload, type SessionPayload } from './cookies.js';
import { emailRefusal } from './emailRules.js';
import { identityProviders, type LoginEndpoints } from './providers.js';
import { LoginRefusal, message, refuse } from './refusals.js';

export { domainMatches, emailMatches } from './emailRules.js';

/** `pass`: the session's email, and when the session must be checked again (ms; open connections close then). */
type LoginOutcome = { kind: 'pass'; email: string; until?: number } | { kind: 'handled' };

interface LoginOptions {
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
const LOGOUT_PATH = '/.edgehub/logout';

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

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function createLogin(options: LoginOptions) {
  const sealed = sealer(options.secretKey);
  const loginTimeoutMs = options.loginTimeoutMs ?? 10 * 60 * 1000;
  const providers = identityProviders({ endpoints: options.endpoints, providerTimeoutMs: options.providerTimeoutMs ?? 10_000 });
  /** state -> expiry: a callback URL is good once per process (the provider also refuses a second use of a code) */
  const usedStates = new Map<string, number>();

  /** Starts a login: a sealed login cookie and the provider's authorization URL. */
  async function begin(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: { host: string; secure: boolean; origin: string }) {
    const provider = route.auth as LoginProvider;
    const state = randomBytes(24).toString('base64url');
    const nonce = randomBytes(24).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const location = await providers.authorizationUrl(provider, ctx.origin + CALLBACK_PATH, state, nonce, verifier);
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
      if (!flow || flow.x < Date.now())
        throw refuse('EH_LOGIN_FLOW_INVALID', 'no login is in progress in this browser (or it took too long); open the share again to sign in');
      if (flow.h !== ctx.host || flow.p !== provider.id)
        throw refuse('EH_LOGIN_FLOW_INVALID', 'the login was started for another share or provider; open the share again to sign in');
      if (!state || !equalStrings(state, flow.s))
        throw refuse('EH_LOGIN_FLOW_INVALID', 'the login state does not match this browser; open the share again to sign in');
      if (usedStates.has(state)) throw refuse('EH_LOGIN_REPLAYED', 'this login response was already used; open the share again to sign in');
      remember(state, flow.x);
      const providerError = current.searchParams.get('error');
      if (providerError)
        throw refuse(
          'EH_LOGIN_PROVIDER_REFUSED',
          `the identity provider refused the login: ${providerError}${current.searchParams.get('error_description') ? ` (${current.searchParams.get('error_description')})` : ''}`,
        );
      const email =
        provider.type === 'GITHUB'
          ? await providers.githubEmail(provider, current, flow, ctx.origin + CALLBACK_PATH)
          : await providers.oidcEmail(provider, current, flow);
      const refusal = emailRefusal(email, route);
      if (refusal) throw refuse('EH_LOGIN_EMAIL_NOT_ALLOWED', refusal);
      const now = Date.now();
      const session: SessionPayload = { v: 1, e: email, h: ctx.host, p: provider.id, a: now, c: now + route.checkIntervalMs };
      res.statusCode = 302;
      res.setHeader('location', flow.r);
      res.setHeader('cache-control', 'no-store');
      res.setHeader('set-cookie', [
        cookie(cookieName(SESSION_COOKIE, ctx.secure), sealed.seal(SESSION_COOKIE, session), ctx.secure, route.checkIntervalMs / 1000),
        clearLogin,
      ]);
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

  function logout(req: IncomingMessage, res: ServerResponse, ctx: { secure: boolean; host: string }) {
    res.statusCode = 200;
    res.setHeader('cache-control', 'no-store');
    res.setHeader('set-cookie', [
      cookie(cookieName(SESSION_COOKIE, ctx.secure), '', ctx.secure, 0),
      cookie(cookieName(LOGIN_COOKIE, ctx.secure), '', ctx.secure, 0),
    ]);
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
    async handle(req: IncomingMessage, res: ServerResponse, route: ShareRoute, ctx: LoginContext): Promise<LoginOutcome> {
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
          if (refusal) throw refuse('EH_LOGIN_EMAIL_NOT_ALLOWED', refusal);
          return { kind: 'pass', email: session.e, until: Math.min(session.c, session.a + route.checkIntervalMs) };
        }
        if (!isBrowser(req))
          throw new LoginRefusal('EH_LOGIN_REQUIRED', 'this share requires login: open it in a browser, or send the session cookie of a login');
        await begin(req, res, route, ctx);
        return { kind: 'handled' };
      } catch (err) {
        const refusal = err instanceof LoginRefusal ? err : new LoginRefusal('EH_IDP_UNREACHABLE', `login failed: ${message(err)}`);
        if (!res.headersSent) answer(res, refusal.code, refusal.message, {}, ctx.tap, route.policy?.errorPages);
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
