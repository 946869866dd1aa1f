/**
 * The identity providers a login talks to. OIDC and GOOGLE: authorization code flow with PKCE, endpoints by
 * discovery from the issuer (openid-client, cached per issuer for an hour), the ID token verified again with jose
 * (signature against the issuer's JWKS, iss, aud, exp, nonce); the email from the ID token or, when the provider keeps
 * it for userinfo, from the userinfo endpoint, and it must be verified. GITHUB: GitHub's OAuth endpoints (with PKCE)
 * and the account's verified primary email (GET /user/emails). Every request goes through the egress policy.
 */
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, customFetch as joseFetch, jwtVerify, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { config } from '../../../shared/config.js';
import { egressFetch } from '../../egressHttp.js';
import type { LoginProvider } from '../../types.js';
import type { LoginPayload } from './cookies.js';
import { LoginRefusal, message, providerFailure, refuse } from './refusals.js';

export interface LoginEndpoints {
  /** Issuer of type GOOGLE (discovery at <issuer>/.well-known/openid-configuration). */
  googleIssuerUrl: string;
  /** Base of GitHub's OAuth endpoints (/login/oauth/authorize, /login/oauth/access_token). */
  githubOAuthUrl: string;
  /** Base of GitHub's REST API (/user/emails). */
  githubApiUrl: string;
}

const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile'];
const DEFAULT_GITHUB_SCOPES = ['read:user', 'user:email'];
const METADATA_TTL_MS = 60 * 60 * 1000;

const isLoopback = (url: URL) => /^(localhost|.*\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(url.hostname);

/** https everywhere; http only for a provider on this machine (tests, local development). */
function providerUrl(raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new LoginRefusal('EH_IDP_UNREACHABLE', `${what} is not a URL: ${raw}`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url)))
    throw new LoginRefusal('EH_IDP_UNREACHABLE', `${what} must use https: ${raw}`);
  return url;
}

interface Metadata {
  metadata: oidc.ServerMetadata;
  at: number;
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** What the login flow asks of providers: where to send the browser, and the verified email of a callback. */
export function identityProviders(options: { endpoints?: Partial<LoginEndpoints>; providerTimeoutMs: number }) {
  const providerTimeoutMs = options.providerTimeoutMs;
  const metadataCache = new Map<string, Promise<Metadata>>();
  const jwksCache = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

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
    if (!provider.issuerUrl) throw new LoginRefusal('EH_IDP_UNREACHABLE', 'the auth provider has no issuer URL');
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
          // every request to an identity provider goes through the egress policy (edge/egressHttp.ts)
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
      throw new LoginRefusal('EH_IDP_UNREACHABLE', `the identity provider's discovery failed: ${message(err)}`);
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

  /** The provider's authorization URL for a login with this state, nonce and PKCE verifier. */
  async function authorizationUrl(provider: LoginProvider, redirectUri: string, state: string, nonce: string, verifier: string): Promise<URL> {
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
    return location;
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
    if (!idToken) throw refuse('EH_LOGIN_PROVIDER_REFUSED', 'the identity provider returned no ID token');
    // the ID token once more with jose: signature by the issuer's keys, iss, aud, exp and our nonce
    const metadata = c.serverMetadata();
    if (!metadata.jwks_uri) throw new LoginRefusal('EH_IDP_UNREACHABLE', 'the identity provider publishes no jwks_uri');
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(idToken, jwksOf(metadata.jwks_uri), {
        issuer: metadata.issuer,
        audience: provider.clientId,
        requiredClaims: ['exp', 'iat', 'sub', 'nonce'],
      }));
    } catch (err) {
      throw refuse('EH_LOGIN_PROVIDER_REFUSED', `the ID token did not verify: ${message(err)}`);
    }
    if (claims.nonce !== flow.n) throw refuse('EH_LOGIN_PROVIDER_REFUSED', 'the ID token was issued for another login (nonce)');
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
    if (typeof email !== 'string' || !email.includes('@'))
      throw refuse('EH_LOGIN_EMAIL_UNVERIFIED', 'the identity provider did not share an email address (is the email scope allowed?)');
    if (verified !== true && verified !== 'true') throw refuse('EH_LOGIN_EMAIL_UNVERIFIED', `the identity provider does not confirm that ${email} is verified`);
    return email.toLowerCase();
  }

  async function githubEmail(provider: LoginProvider, current: URL, flow: LoginPayload, redirectUri: string): Promise<string> {
    const code = current.searchParams.get('code');
    if (!code) throw refuse('EH_LOGIN_PROVIDER_REFUSED', 'the login response carries no code');
    const { githubOAuthUrl, githubApiUrl } = endpoints();
    const tokenUrl = new URL('/login/oauth/access_token', providerUrl(githubOAuthUrl, 'the GitHub OAuth URL'));
    const answer = await fetchJson(tokenUrl, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
        code,
        redirect_uri: redirectUri,
        code_verifier: flow.k,
      }).toString(),
    });
    // an answer that is JSON but not an object (null, a number) is a refusal, not a TypeError
    const token: Record<string, unknown> = answer && typeof answer === 'object' ? (answer as Record<string, unknown>) : {};
    if (typeof token.access_token !== 'string')
      throw refuse(
        'EH_LOGIN_PROVIDER_REFUSED',
        `GitHub refused the login: ${String(token.error ?? 'no access token')}${token.error_description ? ` (${String(token.error_description)})` : ''}`,
      );
    const emailsUrl = new URL('user/emails', providerUrl(githubApiUrl.replace(/\/?$/, '/'), 'the GitHub API URL'));
    const emails = await fetchJson(emailsUrl, {
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${token.access_token}`,
        'user-agent': 'edgehub-edge',
        'x-github-api-version': '2022-11-28',
      },
    });
    if (!Array.isArray(emails)) throw new LoginRefusal('EH_IDP_UNREACHABLE', 'GitHub did not list the account emails');
    const primary = emails.find((e: { primary?: boolean } | null) => e?.primary === true) as { email?: string; verified?: boolean } | undefined;
    if (!primary || typeof primary.email !== 'string') throw refuse('EH_LOGIN_EMAIL_UNVERIFIED', 'the GitHub account has no primary email');
    if (primary.verified !== true) throw refuse('EH_LOGIN_EMAIL_UNVERIFIED', `the GitHub account's primary email ${primary.email} is not verified`);
    return primary.email.toLowerCase();
  }

  async function fetchJson(url: URL, init: RequestInit): Promise<unknown> {
    let res: Response;
    try {
      res = await egressFetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(providerTimeoutMs) });
    } catch (err) {
      throw new LoginRefusal('EH_IDP_UNREACHABLE', `the identity provider could not be reached: ${message(err)}`);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new LoginRefusal('EH_IDP_UNREACHABLE', `the identity provider answered ${res.status} without JSON`);
    }
    if (!res.ok && !(body && typeof body === 'object' && 'error' in body))
      throw new LoginRefusal('EH_IDP_UNREACHABLE', `the identity provider answered ${res.status}`);
    return body;
  }

  return { authorizationUrl, oidcEmail, githubEmail };
}
