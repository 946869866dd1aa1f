/**
 * Identity providers for login tests: a real OpenID provider (the `oidc-provider` package, with its development
 * login and consent pages, run in the test process), and a stand-in for GitHub's OAuth and REST endpoints (GitHub
 * itself cannot be reached here) that checks what GitHub checks: client credentials, single-use codes bound to the
 * redirect URI, and the PKCE verifier.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { Browser, Page } from './browser.js';

export interface Idp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  stop(): Promise<void>;
}

const listen = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

const close = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/**
 * An OpenID provider at http://127.0.0.1:<port>. Any login name is accepted (the name is the email; names starting
 * with `unverified` have email_verified false). Email claims come from userinfo (conformant ID token claims) unless
 * `emailInIdToken`.
 */
export async function startOidcProvider(options: { redirectUris: string[]; emailInIdToken?: boolean }): Promise<Idp> {
  const server = http.createServer();
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = `edge-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    async findAccount(_ctx, sub) {
      return { accountId: sub, claims: async () => ({ sub, email: sub, email_verified: !sub.startsWith('unverified') }) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    conformIdTokenClaims: !options.emailInIdToken,
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    cookies: { keys: [randomBytes(16).toString('hex')] },
  });
  server.on('request', provider.callback());
  return { issuer, clientId, clientSecret, stop: () => close(server) };
}

const isCallback = (url: URL) => url.pathname === '/.edgehub/oauth/callback';

/**
 * Drives a login at the OpenID provider from the page the edge redirected to: signs in as `email`, consents, and
 * stops before the callback (returned, so tests can replay or tamper with it).
 */
export async function signInAtIdp(browser: Browser, authorizationUrl: URL, email: string): Promise<URL> {
  let step = await browser.navigate(authorizationUrl, { stopAt: isCallback });
  for (let i = 0; i < 4 && !step.stoppedAt; i++) {
    const page = step.page as Page;
    if (/name="login"/.test(page.body)) step = await browser.submit(page, { login: email, password: 'any' }, { stopAt: isCallback });
    else if (/name="prompt" value="consent"/.test(page.body)) step = await browser.submit(page, {}, { stopAt: isCallback });
    else throw new Error(`unexpected page at the provider ${page.url}: ${page.status} ${page.body.slice(0, 400)}`);
  }
  if (!step.stoppedAt) throw new Error('the provider never redirected back to the callback');
  return step.stoppedAt;
}

export interface GitHubStandIn {
  oauthUrl: string;
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  /** The account "signed in" at GitHub, with its emails as GET /user/emails lists them. */
  account: { login: string; emails: { email: string; primary: boolean; verified: boolean; visibility: string | null }[] };
  /** Token requests seen, for assertions. */
  tokenRequests: Record<string, string>[];
  stop(): Promise<void>;
}

export async function startGitHubStandIn(): Promise<GitHubStandIn> {
  const clientId = `Iv1.${randomBytes(8).toString('hex')}`;
  const clientSecret = randomBytes(20).toString('hex');
  const codes = new Map<string, { redirectUri: string; challenge: string; login: string; used: boolean }>();
  const tokens = new Map<string, GitHubStandIn['account']>();
  const standIn: GitHubStandIn = {
    oauthUrl: '',
    apiUrl: '',
    clientId,
    clientSecret,
    account: { login: 'octo', emails: [] },
    tokenRequests: [],
    stop: async () => undefined,
  };
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://github.invalid');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const q = Object.fromEntries(url.searchParams);
      if (q.client_id !== clientId) return json(res, 404, { error: 'unknown client' });
      if (q.code_challenge_method !== 'S256' || !q.code_challenge) return json(res, 400, { error: 'PKCE S256 expected by this stand-in' });
      const code = randomBytes(10).toString('hex');
      codes.set(code, { redirectUri: q.redirect_uri, challenge: q.code_challenge, login: standIn.account.login, used: false });
      const back = new URL(q.redirect_uri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.state);
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      standIn.tokenRequests.push(form);
      // GitHub answers token errors with 200 and an error member
      if (form.client_id !== clientId || form.client_secret !== clientSecret) return json(res, 200, { error: 'incorrect_client_credentials' });
      const grant = codes.get(form.code);
      if (!grant || grant.used) return json(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
      grant.used = true;
      if (grant.redirectUri !== form.redirect_uri) return json(res, 200, { error: 'redirect_uri_mismatch' });
      if (
        createHash('sha256')
          .update(form.code_verifier ?? '')
          .digest('base64url') !== grant.challenge
      )
        return json(res, 200, { error: 'bad_verification_code', error_description: 'PKCE verification failed' });
      const token = `gho_${randomBytes(12).toString('hex')}`;
      tokens.set(token, structuredClone(standIn.account));
      return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    if (req.method === 'GET' && url.pathname === '/user/emails') {
      const account = tokens.get(String(req.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!account) return json(res, 401, { message: 'Bad credentials' });
      return json(res, 200, account.emails);
    }
    json(res, 404, { message: 'Not Found' });
  });
  const port = await listen(server);
  standIn.oauthUrl = `http://127.0.0.1:${port}`;
  standIn.apiUrl = `http://127.0.0.1:${port}/`;
  standIn.stop = () => close(server);
  return standIn;
}
