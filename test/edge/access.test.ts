/**
 * Access control through the real edge (in-process, real sockets, change notifications from PostgreSQL):
 * - mutual TLS: a token with a commonName -> its enrollment JWT -> the enrollment client as a child process ->
 *   the written key and certificate reach a mutualTls share (node https client and curl), the target sees the
 *   verified identity and never a forged one; after the certificate's DELETE it is refused within 2 s;
 * - login: an OIDC auth provider (oidc-provider in this process) on a share; a scripted browser signs in through
 *   the edge's redirects and callback, the target sees X-Forwarded-Email and no edge cookie.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import WebSocket, { WebSocketServer } from 'ws';
import type { Edge } from '../../edge/server.js';
import { Browser } from '../helpers/browser.js';
import { edgeRequest, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { signInAtIdp, startOidcProvider, type Idp } from '../helpers/identityProviders.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { curlRequest, keyAndCsr, selfSigned, tempFile } from '../helpers/tlsClient.js';
import { repoRoot } from '../helpers/repo.js';
import { assertRefused } from '../helpers/refusals.js';

const run = promisify(execFile);
const root = repoRoot;

const stack = useStack(test);
stack.onStop(async () => {
  await edge?.stop(1000);
  await backend?.close();
  for (const idp of idps) await idp.stop();
});
let edge: Edge;
let backend: Backend;
let hub: HubFixture;
let other: HubFixture;
const idps: Idp[] = [];

/** What the target saw: the identity headers and the cookie the edge forwarded. */
const echo = (req: http.IncomingMessage) => ({
  url: req.url,
  certificateName: req.headers['x-client-certificate-name'] ?? null,
  certificateFingerprint: req.headers['x-client-certificate-fingerprint'] ?? null,
  email: req.headers['x-forwarded-email'] ?? null,
  cookie: req.headers.cookie ?? null,
});

test.before(async () => {
  edge = await startTestEdge();
  backend = await startBackend((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(echo(req)));
  });
  hub = await stack.hub({ name: 'access-a' });
  other = await stack.hub({ name: 'access-b' });
});

async function enrollWithClient(h: HubFixture, name: string, commonName: string) {
  const tok = await h.call('POST', `${h.h}/certificate-request-tokens`, { body: { name, commonName } });
  if (tok.status !== 201) throw new Error(tok.text);
  const jwt = await h.call('GET', `${h.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  const out = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'edge-enroll-'));
  const { stdout } = await run(
    process.execPath,
    [path.join(root, 'agent', 'bin', 'edgehub.js'), 'enroll', jwt.json.jwt, '--out', out, '--expect-host', new URL(stack.baseUrl).host],
    { cwd: root },
  );
  const certFile = path.join(out, `${name}.crt`);
  const keyFile = path.join(out, `${name}.key`);
  return { stdout, certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

const overTls = (host: string, creds: { cert?: string; key?: string }, extra: { headers?: Record<string, string>; agent?: https.Agent; path?: string } = {}) =>
  edgeRequest(edge.httpsPort!, host, { path: extra.path, headers: extra.headers, agent: extra.agent, tls: { ...creds, rejectUnauthorized: false } });

test('mTLS: token with commonName -> JWT -> enrollment client -> the written key and certificate reach the share; refused within 2 s of the DELETE', async (t) => {
  const device = await enrollWithClient(hub, 'device-1', 'device-1.example.com');
  t.regex(device.stdout, /wrote .*device-1\.crt/);
  const { host } = await routedShare(edge, hub, { target: backend.url, mutualTls: true });
  await edge.settled();

  const ok = await overTls(host, device, { headers: { 'x-client-certificate-name': 'forged', 'x-client-certificate-fingerprint': 'forged' } });
  t.is(ok.status, 200, ok.text);
  t.is(ok.json.certificateName, 'device-1');
  t.regex(ok.json.certificateFingerprint, /^[0-9a-f]{64}$/);
  const listed = await hub.call('GET', `${hub.h}/client-certificates?size=100`);
  const id = listed.json.content.find((c: { name: string }) => c.name === 'device-1').id;
  t.is((await hub.call('GET', `${hub.h}/client-certificates/${id}`)).json.fingerprintSha256, ok.json.certificateFingerprint);

  // curl with the files as written (certificate with its chain)
  const curl = await curlRequest(`https://${host}:${edge.httpsPort}/via-curl`, {
    certFile: device.certFile,
    keyFile: device.keyFile,
    resolve: `${host}:${edge.httpsPort}:127.0.0.1`,
  });
  t.is(curl.status, 200, curl.body);
  t.is(curl.json.certificateName, 'device-1');

  // refusals: no certificate, plain HTTP
  const none = await overTls(host, {});
  assertRefused(t, none, 403, 'forbidden', 'EH_MTLS_NO_CERT');
  t.is((await edgeRequest(edge.httpPort!, host, { headers: { 'x-client-certificate-name': 'device-1' } })).status, 403);

  // a kept-alive connection and a fresh one: both refused within 2 s of the DELETE
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  t.is((await overTls(host, device, { agent })).status, 200);
  const kept = Object.values(agent.freeSockets).flat()[0];
  t.truthy(kept, 'the connection is kept alive');
  const keptClosed = new Promise<void>((resolve) => kept!.once('close', () => resolve()));
  const deleted = await hub.call('DELETE', `${hub.h}/client-certificates/${id}`);
  t.is(deleted.status, 200);
  // the edge closes the kept-alive connection of the deleted certificate (edge/revocation.ts)
  await waitFor(async () => Promise.race([keptClosed.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]), {
    timeoutMs: 2000,
    intervalMs: 10,
    what: 'the kept-alive connection of the deleted certificate closed',
  });
  const refused = await waitFor(
    async () => {
      const r = await overTls(host, device, { agent }).catch(() => undefined);
      return r?.status === 403 && r;
    },
    { timeoutMs: 2000, intervalMs: 50, what: 'the deleted certificate refused' },
  );
  assertRefused(t, refused, 403, 'forbidden', 'EH_MTLS_CERT_DELETED');
  t.is((await overTls(host, device)).status, 403);
  const curlAfter = await curlRequest(`https://${host}:${edge.httpsPort}/`, {
    certFile: device.certFile,
    keyFile: device.keyFile,
    resolve: `${host}:${edge.httpsPort}:127.0.0.1`,
  });
  t.is(curlAfter.status, 403);
  agent.destroy();
});

test("mTLS: another hub's certificate, an uploaded one exactly, and a resuming client through the edge", async (t) => {
  const { host } = await routedShare(edge, hub, { target: backend.url, mutualTls: true });
  const theirs = await enrollWithClient(other, 'their-device', 'their-device');
  const { keyPem, csrPem } = await keyAndCsr('/CN=laptop');
  const generated = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'laptop', value: csrPem } });
  t.is(generated.status, 201, generated.text);
  const cert = (await hub.call('GET', `${hub.h}/client-certificates/${generated.json.id}`)).json.value;
  await edge.settled();

  const r1 = await overTls(host, theirs);
  assertRefused(t, r1, 403, 'forbidden', 'EH_MTLS_CERT_OTHER_HUB');

  // a new certificate is admitted within 2 s of its creation; a client that offers TLS sessions keeps its identity
  await waitFor(async () => (await overTls(host, { cert, key: keyPem })).status === 200, { timeoutMs: 2000, what: 'the new certificate admitted' });
  const agent = new https.Agent({ keepAlive: false, maxCachedSessions: 10 });
  for (let i = 0; i < 3; i++) {
    const r = await overTls(host, { cert, key: keyPem }, { agent });
    t.is(r.status, 200, r.text);
    t.is(r.json.certificateName, 'laptop');
  }
  agent.destroy();
  // an uploaded certificate is admitted exactly: the same subject with another key is not
  const upload = await selfSigned('partner', new Date(Date.now() - 86400_000), new Date(Date.now() + 86400_000));
  const lookalike = await selfSigned('partner', new Date(Date.now() - 86400_000), new Date(Date.now() + 86400_000));
  t.is((await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'partner', value: upload.certPem } })).status, 201);
  await waitFor(async () => (await overTls(host, { cert: upload.certPem, key: upload.keyPem })).status === 200, {
    timeoutMs: 2000,
    what: 'the upload admitted',
  });
  t.is((await overTls(host, { cert: upload.certPem, key: upload.keyPem })).json.certificateName, 'partner');
  const r2 = await overTls(host, { cert: lookalike.certPem, key: lookalike.keyPem });
  assertRefused(t, r2, 403, 'forbidden', 'EH_MTLS_CERT_UNKNOWN');

  // the certificate's file on disk works with curl too
  const curl = await curlRequest(`https://${host}:${edge.httpsPort}/`, {
    certFile: tempFile('crt', cert),
    keyFile: tempFile('key', keyPem),
    resolve: `${host}:${edge.httpsPort}:127.0.0.1`,
  });
  t.is(curl.status, 200);
});

/** An OIDC provider registered for `hosts` (on the edge's HTTP port), and an auth provider of `h` using it. */
async function oidcFor(h: HubFixture, hosts: string[], providerId: string, emailPatterns: string[]) {
  const idp = await startOidcProvider({
    redirectUris: hosts.flatMap((host) => [
      `http://${host}:${edge.httpPort}/.edgehub/oauth/callback`,
      `https://${host}:${edge.httpsPort}/.edgehub/oauth/callback`,
    ]),
  });
  idps.push(idp);
  // the provider's settings change on a live share: the edge picks them up from the change notification
  const patched = await h.call('PATCH', `${h.h}/auth-providers/${providerId}`, {
    body: { config: { clientId: idp.clientId, clientSecret: idp.clientSecret, issuerUrl: idp.issuer }, emailPatterns },
  });
  if (patched.status !== 200) throw new Error(`${patched.status} ${patched.text}`);
  await waitFor(async () => hosts.every((host) => edge.routes.lookup(host)?.auth?.clientId === idp.clientId), {
    timeoutMs: 2000,
    what: 'the edge seeing the provider change',
  });
  return idp;
}

test('login through the edge: a browser signs in at the OpenID provider; the target sees the email and no edge cookie', async (t) => {
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: {
      name: 'corp',
      type: 'OIDC',
      config: { clientId: 'placeholder', clientSecret: 'placeholder', issuerUrl: 'http://127.0.0.1:9', scopes: ['openid', 'email'] },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const a = await routedShare(edge, hub, { target: backend.url, authProviderId: provider.json.id });
  const b = await routedShare(edge, hub, { target: backend.url, authProviderId: provider.json.id, oauthEmailDomains: ['example.com'] });
  const idp = await oidcFor(hub, [a.host, b.host], provider.json.id, ['*@example.com']);
  const url = (host: string, p = '/') => `http://${host}:${edge.httpPort}${p}`;

  // a non-browser client: 401 JSON from the edge
  const api = await edgeRequest(edge.httpPort!, a.host, { headers: { accept: 'application/json' } });
  assertRefused(t, api, 401, 'unauthorized', 'EH_LOGIN_REQUIRED');

  const browser = new Browser();
  browser.cookies(a.host).set('app', { value: 'mine', attributes: '' });
  const first = await browser.request(url(a.host, '/inbox?unread=1'));
  t.is(first.status, 302);
  const authorization = new URL(first.headers.location as string);
  t.is(authorization.origin, idp.issuer);
  t.is(authorization.searchParams.get('redirect_uri'), url(a.host, '/.edgehub/oauth/callback'));
  const callback = await signInAtIdp(browser, authorization, 'alice@example.com');
  t.is(callback.host, `${a.host}:${edge.httpPort}`);
  const back = await browser.request(callback);
  t.is(back.status, 302, back.body);
  t.is(back.headers.location, '/inbox?unread=1');
  const page = await browser.request(url(a.host, '/inbox?unread=1'), { headers: { 'x-forwarded-email': 'forged@example.com' } });
  t.is(page.status, 200, page.body);
  t.deepEqual(
    { email: page.json.email, cookie: page.json.cookie, url: page.json.url },
    { email: 'alice@example.com', cookie: 'app=mine', url: '/inbox?unread=1' },
  );

  // the session cookie works for a non-browser client of the same host, not on the other share's host
  const session = browser.cookies(a.host).get('edgehub_session')?.value as string;
  const withCookie = await edgeRequest(edge.httpPort!, a.host, { headers: { accept: 'application/json', cookie: `edgehub_session=${session}` } });
  t.is(withCookie.status, 200);
  t.is(withCookie.json.email, 'alice@example.com');
  t.is(withCookie.json.cookie, null, 'only the edge cookie was sent: none goes upstream');
  const elsewhere = await edgeRequest(edge.httpPort!, b.host, { headers: { accept: 'application/json', cookie: `edgehub_session=${session}` } });
  t.is(elsewhere.status, 401);
  const tampered = await edgeRequest(edge.httpPort!, a.host, { headers: { accept: 'application/json', cookie: `edgehub_session=${session.slice(0, -3)}xyz` } });
  t.is(tampered.status, 401);

  // a refused email: 403 at the callback, no session
  const mallory = new Browser();
  const m1 = await mallory.request(url(a.host));
  const mcb = await signInAtIdp(mallory, new URL(m1.headers.location as string), 'mallory@evil.test');
  const refused = await mallory.request(mcb);
  assertRefused(t, refused, 403, 'forbidden', 'EH_LOGIN_EMAIL_NOT_ALLOWED');
  t.falsy(mallory.cookies(a.host).get('edgehub_session'));

  // a wrong state is refused
  const eve = new Browser();
  const e1 = await eve.request(url(b.host));
  const ecb = await signInAtIdp(eve, new URL(e1.headers.location as string), 'eve@example.com');
  ecb.searchParams.set('state', 'forged');
  assertRefused(t, await eve.request(ecb), 403, 'forbidden', 'EH_LOGIN_FLOW_INVALID');

  // logout through the edge
  const out = await browser.request(url(a.host, '/.edgehub/logout'), { accept: 'application/json' });
  t.is(out.status, 200);
  t.is((await browser.request(url(a.host, '/inbox'), { accept: 'application/json' })).status, 401);

  // over the edge's TLS listener the session cookie is Secure and __Host- prefixed
  const tlsUrl = `https://${a.host}:${edge.httpsPort}/secure`;
  const secure = new Browser();
  // the standard frontend's certificate is issued by a worker at its first start
  const started = await waitFor(async () => (await secure.request(tlsUrl).catch(() => undefined)) as Awaited<ReturnType<Browser['request']>> | undefined, {
    what: 'the edge serving TLS for the public frontend',
  });
  t.is(started.status, 302);
  const scb = await signInAtIdp(secure, new URL(started.headers.location as string), 'alice@example.com');
  t.is(scb.origin, `https://${a.host}:${edge.httpsPort}`);
  const sback = await secure.request(scb);
  t.is(sback.status, 302, sback.body);
  const set = sback.setCookies.find((c) => c.startsWith('__Host-edgehub_session=')) as string;
  t.regex(set, /; Secure/);
  t.regex(set, /HttpOnly/);
  t.notRegex(set, /Domain=/i);
  const spage = await secure.request(tlsUrl);
  t.is(spage.status, 200);
  t.is(spage.json.email, 'alice@example.com');
  t.is(spage.json.cookie, null);
});

test("login: an open WebSocket of a session whose email the provider's patterns no longer allow is closed within 2 s", async (t) => {
  const wsBackend = await startBackend((_req, res) => res.end('plain'));
  const wss = new WebSocketServer({ server: wsBackend.server });
  wss.on('connection', (socket, req) => socket.send(`hello ${req.headers['x-forwarded-email']}`));
  t.teardown(async () => {
    wss.close();
    await wsBackend.close();
  });
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: {
      name: 'ws-corp',
      type: 'OIDC',
      config: { clientId: 'placeholder', clientSecret: 'placeholder', issuerUrl: 'http://127.0.0.1:9' },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const share = await routedShare(edge, hub, { target: wsBackend.url, authProviderId: provider.json.id });
  const idp = await oidcFor(hub, [share.host], provider.json.id, ['*@example.com']);
  const browser = new Browser();
  const first = await browser.request(`http://${share.host}:${edge.httpPort}/`);
  const callback = await signInAtIdp(browser, new URL(first.headers.location as string), 'bob@example.com');
  t.is((await browser.request(callback)).status, 302);
  const session = browser.cookies(share.host).get('edgehub_session')?.value as string;
  t.truthy(session);
  const ws = new WebSocket(`ws://127.0.0.1:${edge.httpPort}/live`, { headers: { host: share.host, cookie: `edgehub_session=${session}` } });
  const greeting = await new Promise<string>((resolve, reject) => {
    ws.once('message', (d) => resolve(d.toString()));
    ws.once('error', reject);
  });
  t.is(greeting, 'hello bob@example.com');
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  // bob is no longer allowed: only alice is
  const patched = await hub.call('PATCH', `${hub.h}/auth-providers/${provider.json.id}`, {
    body: { config: { clientId: idp.clientId, clientSecret: idp.clientSecret, issuerUrl: idp.issuer }, emailPatterns: ['alice@example.com'] },
  });
  t.is(patched.status, 200, patched.text);
  await waitFor(async () => Promise.race([closed.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]), {
    timeoutMs: 2000,
    intervalMs: 10,
    what: 'the WebSocket of the no longer allowed session closed',
  });
  t.pass();
});
