/**
 * Login for shares with an auth provider, against a real OpenID provider (oidc-provider in this process) and a
 * GitHub stand-in. A small node server calls `login.handle()` exactly as the edge does (host without port, secure
 * when over TLS, the origin the browser used) and answers 200 with the email on 'pass'. A scripted browser follows
 * the redirects, signs in at the provider, and keeps cookies per host.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { createLogin, domainMatches, emailMatches } from '../../edge/access/login/index.js';
import type { LoginProvider, ShareRoute } from '../../edge/types.js';
import { loadConfig } from '../../shared/config.js';
import { Browser, type Page } from '../helpers/browser.js';
import { signInAtIdp, startGitHubStandIn, startOidcProvider, type GitHubStandIn, type Idp } from '../helpers/identityProviders.js';
import { serverCertificate } from '../helpers/tlsClient.js';
import { assertRefused } from '../helpers/refusals.js';

const routes = new Map<string, ShareRoute>();
let httpServer: http.Server;
let httpsServer: https.Server;
let httpPort: number;
let httpsPort: number;
let idp: Idp;
let google: Idp;
let github: GitHubStandIn;
let login: ReturnType<typeof createLogin>;

const HOSTS = ['a', 'b', 'domains', 'short', 'unverified', 'g', 'gh', 'sec'];
const hostOf = (label: string) => `${label}.share.localhost`;
const httpUrl = (label: string, path = '/') => `http://${hostOf(label)}:${httpPort}${path}`;
const httpsUrl = (label: string, path = '/') => `https://${hostOf(label)}:${httpsPort}${path}`;

function route(label: string, auth: LoginProvider, extra: Partial<ShareRoute> = {}): void {
  routes.set(hostOf(label), {
    zId: label,
    hubId: 'hub-1',
    envZId: 'env-1',
    reach: 'edge',
    frontendId: 'public',
    target: new URL('http://127.0.0.1:9/'),
    mutualTls: false,
    auth,
    emailDomains: null,
    checkIntervalMs: 3 * 3600_000,
    ...extra,
  });
}

async function handler(req: http.IncomingMessage, res: http.ServerResponse) {
  const hostHeader = String(req.headers.host ?? '');
  const host = hostHeader.replace(/:\d+$/, '').toLowerCase();
  const r = routes.get(host);
  if (!r) {
    res.writeHead(404).end();
    return;
  }
  const secure = Boolean((req.socket as { encrypted?: boolean }).encrypted);
  const outcome = await login.handle(req, res, r, { host, secure, origin: `${secure ? 'https' : 'http'}://${hostHeader}` });
  if (outcome.kind === 'pass') {
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ email: outcome.email, path: req.url, upstreamCookie: login.stripCookies(req.headers.cookie) ?? null }));
  }
}

test.before(async () => {
  httpServer = http.createServer(handler);
  httpsServer = https.createServer(await serverCertificate(), handler);
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => httpsServer.listen(0, '127.0.0.1', r));
  httpPort = (httpServer.address() as AddressInfo).port;
  httpsPort = (httpsServer.address() as AddressInfo).port;
  const redirectUris = [...HOSTS.map((h) => httpUrl(h, '/.edgehub/oauth/callback')), ...HOSTS.map((h) => httpsUrl(h, '/.edgehub/oauth/callback'))];
  idp = await startOidcProvider({ redirectUris });
  google = await startOidcProvider({ redirectUris, emailInIdToken: true });
  github = await startGitHubStandIn();
  login = createLogin({
    secretKey: randomBytes(32),
    endpoints: { googleIssuerUrl: google.issuer, githubOAuthUrl: github.oauthUrl, githubApiUrl: github.apiUrl },
  });
  const oidcProvider: LoginProvider = {
    id: 'ap-oidc',
    type: 'OIDC',
    clientId: idp.clientId,
    clientSecret: idp.clientSecret,
    issuerUrl: idp.issuer,
    scopes: ['openid', 'email'],
    emailPatterns: ['*@example.com', 'bob@example.org'],
  };
  route('a', oidcProvider);
  route('b', oidcProvider);
  route('sec', oidcProvider);
  route('domains', oidcProvider, { emailDomains: ['example.org'] });
  route('short', oidcProvider, { checkIntervalMs: 1500 });
  route('unverified', { ...oidcProvider, emailPatterns: [] });
  route('g', {
    id: 'ap-google',
    type: 'GOOGLE',
    clientId: google.clientId,
    clientSecret: google.clientSecret,
    issuerUrl: null,
    scopes: [],
    emailPatterns: ['*@example.com'],
  });
  route('gh', {
    id: 'ap-github',
    type: 'GITHUB',
    clientId: github.clientId,
    clientSecret: github.clientSecret,
    issuerUrl: null,
    scopes: [],
    emailPatterns: ['*@example.com'],
  });
});

test.after.always(async () => {
  for (const s of [httpServer, httpsServer]) {
    s?.closeAllConnections();
    await new Promise((r) => s?.close(r));
  }
  await idp?.stop();
  await google?.stop();
  await github?.stop();
});

/** Opens a share page in the browser, signs in as `email` at the provider, and stops before the callback. */
async function startLogin(browser: Browser, url: string, email: string) {
  const first = await browser.request(url);
  if (first.status !== 302) throw new Error(`expected a redirect to the provider, got ${first.status} ${first.body}`);
  const authorization = new URL(first.headers.location as string);
  const callback = await signInAtIdp(browser, authorization, email);
  return { first, authorization, callback };
}

/** The whole login: returns the callback's answer and the page it leads to. */
async function fullLogin(browser: Browser, url: string, email: string) {
  const { callback, authorization, first } = await startLogin(browser, url, email);
  const answer = await browser.request(callback);
  let page: Page | undefined;
  if (answer.status === 302) page = await browser.request(new URL(answer.headers.location as string, callback));
  return { first, authorization, callback, answer, page };
}

const sessionCookie = (browser: Browser, label: string, name = 'edgehub_session') => browser.cookies(hostOf(label)).get(name);
const api = (browser: Browser, url: string, cookie?: string) =>
  browser.request(url, { accept: 'application/json', noCookies: cookie === undefined, headers: cookie ? { cookie } : {} });

test('OIDC: an allowed email signs in with PKCE, state and nonce; the host-only session cookie admits browser and API calls', async (t) => {
  const browser = new Browser();
  browser.cookies(hostOf('a')).set('app', { value: 'keep-me', attributes: '' });
  const { first, authorization, answer, page } = await fullLogin(browser, httpUrl('a', '/docs/page?x=1'), 'alice@example.com');
  // the redirect to the provider: code flow, PKCE S256, state, nonce, the share's own callback
  t.is(authorization.origin, idp.issuer);
  t.is(authorization.searchParams.get('response_type'), 'code');
  t.is(authorization.searchParams.get('code_challenge_method'), 'S256');
  t.regex(authorization.searchParams.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
  t.truthy(authorization.searchParams.get('state'));
  t.truthy(authorization.searchParams.get('nonce'));
  t.is(authorization.searchParams.get('redirect_uri'), httpUrl('a', '/.edgehub/oauth/callback'));
  t.is(authorization.searchParams.get('client_id'), idp.clientId);
  const loginCookie = first.setCookies.find((c) => c.startsWith('edgehub_login='));
  t.truthy(loginCookie);
  t.regex(loginCookie as string, /HttpOnly/);
  t.regex(loginCookie as string, /SameSite=Lax/);

  t.is(answer.status, 302, answer.body);
  t.is(answer.headers.location, '/docs/page?x=1');
  const set = answer.setCookies.find((c) => c.startsWith('edgehub_session=')) as string;
  t.truthy(set);
  t.regex(set, /; Path=\/;/);
  t.regex(set, /HttpOnly/);
  t.regex(set, /SameSite=Lax/);
  t.notRegex(set, /Domain=/i, 'host-only');
  t.notRegex(set, /Secure/, 'not over plain HTTP');
  t.true(
    answer.setCookies.some((c) => /^edgehub_login=;.*Max-Age=0/.test(c)),
    'the login cookie is cleared',
  );

  t.is(page?.status, 200);
  t.is(page?.json.email, 'alice@example.com');
  t.is(page?.json.path, '/docs/page?x=1');
  t.is(page?.json.upstreamCookie, 'app=keep-me', 'the edge cookies never reach the target');

  // a non-browser client with the cookie passes; without it, 401 JSON
  const cookie = `edgehub_session=${sessionCookie(browser, 'a')?.value}`;
  const withCookie = await api(browser, httpUrl('a', '/api'), cookie);
  t.is(withCookie.status, 200);
  t.is(withCookie.json.email, 'alice@example.com');
  const without = await api(browser, httpUrl('a', '/api'));
  assertRefused(t, without, 401, 'unauthorized', 'EH_LOGIN_REQUIRED');
});

test('OIDC: a refused email gets 403 at the callback and no session; exact addresses and share email domains apply', async (t) => {
  const browser = new Browser();
  const refused = await fullLogin(browser, httpUrl('a'), 'mallory@evil.test');
  // the message names the refused address
  assertRefused(t, refused.answer, 403, 'forbidden', 'EH_LOGIN_EMAIL_NOT_ALLOWED', 'mallory@evil.test');
  t.falsy(sessionCookie(browser, 'a'));
  const after = await browser.request(httpUrl('a', '/x'), { accept: 'application/json' });
  t.is(after.status, 401);

  // an exact address of the patterns
  t.is((await fullLogin(new Browser(), httpUrl('a'), 'bob@example.org')).page?.json.email, 'bob@example.org');
  t.is((await fullLogin(new Browser(), httpUrl('a'), 'carol@example.org')).answer.status, 403);
  // the share's own email domains restrict further: example.com matches the pattern but not the domain
  const notDomain = await fullLogin(new Browser(), httpUrl('domains'), 'alice@example.com');
  assertRefused(t, notDomain.answer, 403, 'forbidden', 'EH_LOGIN_EMAIL_NOT_ALLOWED');
  t.is((await fullLogin(new Browser(), httpUrl('domains'), 'bob@example.org')).page?.json.email, 'bob@example.org');
  // an email the provider does not confirm as verified
  const unverified = await fullLogin(new Browser(), httpUrl('unverified'), 'unverified-eve@example.com');
  assertRefused(t, unverified.answer, 403, 'forbidden', 'EH_LOGIN_EMAIL_UNVERIFIED');
});

test('tampered cookies and a cookie presented on another share host are refused', async (t) => {
  const browser = new Browser();
  await fullLogin(browser, httpUrl('a'), 'alice@example.com');
  const value = sessionCookie(browser, 'a')?.value as string;
  t.is((await api(browser, httpUrl('a'), `edgehub_session=${value}`)).status, 200);
  const flipped = value.slice(0, 20) + (value[20] === 'A' ? 'B' : 'A') + value.slice(21);
  for (const bad of [flipped, value.slice(0, -2), value + 'AA', 'garbage', '']) {
    const r = await api(browser, httpUrl('a'), `edgehub_session=${bad}`);
    t.is(r.status, 401, bad);
  }
  // share b uses the same provider and patterns: the session of a is still not a session of b
  const other = await api(browser, httpUrl('b'), `edgehub_session=${value}`);
  t.is(other.status, 401);
  const otherBrowser = await browser.request(httpUrl('b'), { headers: { cookie: `edgehub_session=${value}` } });
  t.is(otherBrowser.status, 302, 'a browser on b is sent to sign in');
  t.true(String(otherBrowser.headers.location).startsWith(idp.issuer));
});

test('a wrong state, a replayed callback, a replayed code and a callback without a login in progress are refused', async (t) => {
  const browser = new Browser();
  const { callback } = await startLogin(browser, httpUrl('a'), 'alice@example.com');
  const wrong = new URL(callback);
  wrong.searchParams.set('state', 'not-the-state');
  const r1 = await browser.request(wrong);
  assertRefused(t, r1, 403, 'forbidden', 'EH_LOGIN_FLOW_INVALID');
  t.falsy(sessionCookie(browser, 'a'));

  // a fresh login, completed once, then the same callback again with the same login cookie
  const second = new Browser();
  const { callback: cb2 } = await startLogin(second, httpUrl('a'), 'alice@example.com');
  const loginCookie = second.cookies(hostOf('a')).get('edgehub_login')?.value as string;
  const ok = await second.request(cb2);
  t.is(ok.status, 302);
  const replay = await second.request(cb2, { headers: { cookie: `edgehub_login=${loginCookie}` } });
  assertRefused(t, replay, 403, 'forbidden', 'EH_LOGIN_REPLAYED');

  // the used code with the state of a new login: the provider refuses to redeem it twice
  const third = new Browser();
  const started = await third.request(httpUrl('a'));
  const newState = new URL(started.headers.location as string).searchParams.get('state') as string;
  const reused = new URL(cb2);
  reused.searchParams.set('state', newState);
  const r3 = await third.request(reused);
  assertRefused(t, r3, 403, 'forbidden', 'EH_LOGIN_PROVIDER_REFUSED', 'invalid_grant');
  t.falsy(sessionCookie(third, 'a'));

  // no login cookie at all
  const r4 = await new Browser().request(cb2);
  assertRefused(t, r4, 403, 'forbidden', 'EH_LOGIN_FLOW_INVALID');
});

test('the session is checked again after the check interval; logout clears it', async (t) => {
  const browser = new Browser();
  const { page } = await fullLogin(browser, httpUrl('short', '/a'), 'alice@example.com');
  t.is(page?.status, 200);
  t.is((await browser.request(httpUrl('short', '/a'), { accept: 'application/json' })).status, 200);
  await new Promise((r) => setTimeout(r, 1600));
  t.is((await browser.request(httpUrl('short', '/a'), { accept: 'application/json' })).status, 401, 'after the interval the session must be renewed');
  // a browser is sent to the provider again, which still knows it: straight back with a new session
  const again = await browser.navigate(httpUrl('short', '/a'));
  t.is(again.page?.status, 200);
  t.is(again.page?.json.email, 'alice@example.com');
  t.true(again.chain.some((u) => u.origin === idp.issuer));

  const out = await browser.request(httpUrl('short', '/.edgehub/logout'), { accept: 'application/json' });
  t.is(out.status, 200);
  t.true(out.setCookies.some((c) => /^edgehub_session=;.*Max-Age=0/.test(c)));
  t.is((await browser.request(httpUrl('short', '/a'), { accept: 'application/json' })).status, 401);
});

test('a changed pattern list applies to existing sessions at once', async (t) => {
  const browser = new Browser();
  const r = routes.get(hostOf('b')) as ShareRoute;
  await fullLogin(browser, httpUrl('b'), 'alice@example.com');
  t.is((await browser.request(httpUrl('b'), { accept: 'application/json' })).status, 200);
  const original = r.auth as LoginProvider;
  routes.set(hostOf('b'), { ...r, auth: { ...original, emailPatterns: ['bob@example.org'] } });
  try {
    const refused = await browser.request(httpUrl('b'), { accept: 'application/json' });
    t.is(refused.status, 403);
    t.is(refused.json.error, 'forbidden');
  } finally {
    routes.set(hostOf('b'), r);
  }
});

test('over TLS the cookies are __Host- prefixed and Secure; the http cookie does not count on https', async (t) => {
  const browser = new Browser();
  const { answer, page } = await fullLogin(browser, httpsUrl('sec', '/s'), 'alice@example.com');
  t.is(answer.status, 302, answer.body);
  const set = answer.setCookies.find((c) => c.startsWith('__Host-edgehub_session=')) as string;
  t.truthy(set, answer.setCookies.join(' | '));
  t.regex(set, /; Secure/);
  t.regex(set, /; Path=\//);
  t.notRegex(set, /Domain=/i);
  t.is(page?.json.email, 'alice@example.com');
  t.is(page?.json.upstreamCookie, null);
  // the same sealed value under the plain name is not a session over TLS
  const value = sessionCookie(browser, 'sec', '__Host-edgehub_session')?.value as string;
  const plainName = await browser.request(httpsUrl('sec', '/s'), {
    accept: 'application/json',
    noCookies: true,
    headers: { cookie: `edgehub_session=${value}` },
  });
  t.is(plainName.status, 401);
});

test('GOOGLE: OIDC with the configured Google issuer (email in the ID token)', async (t) => {
  const browser = new Browser();
  const { authorization, page } = await fullLogin(browser, httpUrl('g', '/'), 'alice@example.com');
  t.is(authorization.origin, google.issuer);
  t.is(page?.json.email, 'alice@example.com');
  t.is((await fullLogin(new Browser(), httpUrl('g', '/'), 'x@other.test')).answer.status, 403);
});

test("GITHUB: GitHub's OAuth endpoints with PKCE and the verified primary email", async (t) => {
  github.account = {
    login: 'octo',
    emails: [
      { email: 'octo@users.noreply.github.com', primary: false, verified: true, visibility: null },
      { email: 'Octo@Example.com', primary: true, verified: true, visibility: 'private' },
    ],
  };
  const browser = new Browser();
  const first = await browser.request(httpUrl('gh', '/repo'));
  t.is(first.status, 302);
  const authorize = new URL(first.headers.location as string);
  t.is(authorize.origin + authorize.pathname, `${github.oauthUrl}/login/oauth/authorize`);
  t.is(authorize.searchParams.get('code_challenge_method'), 'S256');
  t.regex(authorize.searchParams.get('scope') ?? '', /user:email/);
  const done = await browser.navigate(authorize);
  t.is(done.page?.status, 200, done.page?.body);
  t.is(done.page?.json.email, 'octo@example.com');
  const tokenRequest = github.tokenRequests.at(-1) as Record<string, string>;
  t.is(tokenRequest.redirect_uri, httpUrl('gh', '/.edgehub/oauth/callback'));
  t.truthy(tokenRequest.code_verifier);

  // a primary email that is not verified is refused, even with a verified secondary one
  github.account = {
    login: 'eve',
    emails: [
      { email: 'eve@example.com', primary: true, verified: false, visibility: null },
      { email: 'eve2@example.com', primary: false, verified: true, visibility: null },
    ],
  };
  const unverified = await new Browser().navigate(httpUrl('gh', '/'));
  assertRefused(t, unverified.page!, 403, 'forbidden', 'EH_LOGIN_EMAIL_UNVERIFIED');
  // a verified primary email outside the patterns
  github.account = { login: 'mal', emails: [{ email: 'mal@evil.test', primary: true, verified: true, visibility: null }] };
  const outside = await new Browser().navigate(httpUrl('gh', '/'));
  t.is(outside.page?.status, 403);

  // a replayed GitHub code (with a new login's state) is refused by GitHub
  github.account = { login: 'octo', emails: [{ email: 'octo@example.com', primary: true, verified: true, visibility: null }] };
  const b2 = new Browser();
  const s = await b2.request(httpUrl('gh', '/'));
  const cb = (await b2.navigate(new URL(s.headers.location as string), { stopAt: (u) => u.pathname === '/.edgehub/oauth/callback' })).stoppedAt as URL;
  t.is((await b2.request(cb)).status, 302);
  const b3 = new Browser();
  const s3 = await b3.request(httpUrl('gh', '/'));
  const replay = new URL(cb);
  replay.searchParams.set('state', new URL(s3.headers.location as string).searchParams.get('state') as string);
  const r = await b3.request(replay);
  assertRefused(t, r, 403, 'forbidden', 'EH_LOGIN_PROVIDER_REFUSED', 'bad_verification_code');
});

test('an unreachable provider is a 502 JSON answer, never a crash', async (t) => {
  const dead: LoginProvider = {
    id: 'ap-dead',
    type: 'OIDC',
    clientId: 'x',
    clientSecret: 'y',
    issuerUrl: 'http://127.0.0.1:9/',
    scopes: [],
    emailPatterns: [],
  };
  routes.set('dead.share.localhost', { ...(routes.get(hostOf('a')) as ShareRoute), auth: dead });
  const r = await new Browser().request(`http://dead.share.localhost:${httpPort}/`);
  assertRefused(t, r, 502, 'bad_gateway', 'EH_IDP_UNREACHABLE');
});

test('email patterns: leading wildcards and exact addresses, case-insensitive; domains', (t) => {
  t.true(emailMatches('Alice@Example.com', ['*@example.com']));
  t.false(emailMatches('alice@example.com.evil.test', ['*@example.com']));
  t.false(emailMatches('alice@sub.example.com', ['*@example.com']));
  t.true(emailMatches('alice@sub.example.com', ['*.example.com']));
  t.true(emailMatches('bob@example.org', ['*@example.com', 'BOB@example.org']));
  t.false(emailMatches('bob2@example.org', ['bob@example.org']));
  t.true(domainMatches('a@Example.org', ['example.org']));
  t.true(domainMatches('a@example.org', ['@example.org']));
  t.true(domainMatches('a@example.org', ['*@example.org']));
  t.false(domainMatches('a@x.example.org', ['example.org']));
});

test('operator settings name the GOOGLE and GITHUB endpoints', (t) => {
  const env = { HUB_ADMIN_TOKEN: 'x'.repeat(20), HUB_SECRET_KEY: 'a'.repeat(64) };
  t.deepEqual(loadConfig(env).login, {
    googleIssuerUrl: 'https://accounts.google.com',
    githubOAuthUrl: 'https://github.com',
    githubApiUrl: 'https://api.github.com',
  });
  const custom = loadConfig({
    ...env,
    HUB_GOOGLE_ISSUER_URL: 'http://127.0.0.1:1',
    HUB_GITHUB_OAUTH_URL: 'http://127.0.0.1:2',
    HUB_GITHUB_API_URL: 'http://127.0.0.1:3',
  });
  t.deepEqual(custom.login, { googleIssuerUrl: 'http://127.0.0.1:1', githubOAuthUrl: 'http://127.0.0.1:2', githubApiUrl: 'http://127.0.0.1:3' });
  t.throws(() => loadConfig({ ...env, HUB_GITHUB_API_URL: 'not a url' }), { message: /HUB_GITHUB_API_URL/ });
});
