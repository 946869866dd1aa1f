/**
 * The edge's own refusals of an inspected share appear in its requests list with their status and the edge's answer,
 * through a real edge and real sockets: login (401), mutual TLS (403), per-hub admission (503), the egress policy
 * (403), no agent connected (502). A refusal is recorded as the client sent it, credentials redacted; the query of
 * the edge's own login callback (a one-time code) is not kept. WebSocket upgrades the edge refuses are listed too (raw sockets).
 */
import net from 'node:net';
import test from 'ava';
import { edgeRequest, publicFrontendCertificate, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { h2Request, h2Session } from '../helpers/h2.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

// 127.0.0.2 is denied (a loopback address nothing listens on), so a share's target there is refused by the policy;
// the tests record on more of one hub's shares than HUB_INSPECT_HUB_SHARES allows by default
const stack = useStack(test, {
  env: { HUB_EGRESS_DENY: '127.0.0.2/32', HUB_EDGE_HUB_MAX_CONNECTIONS: '2', HUB_EDGE_FLUSH_MS: '600000', HUB_INSPECT_HUB_SHARES: '20' },
});
/** Requests to /hold wait until release() is called. */
let held: (() => void)[] = [];
/** The headers of the requests the target received, by path. */
const received = new Map<string, Record<string, string | string[] | undefined>>();
const release = () => {
  for (const go of held) go();
  held = [];
};
const backend = useBackend(test, stack, (req, res) => {
  received.set(req.url ?? '', req.headers);
  if (req.url === '/hold') return void held.push(() => res.end('released'));
  res.end('served');
});
const edge = useTestEdge(test, stack);
let hub: HubFixture;

test.before(async () => {
  hub = await stack.hub();
  await publicFrontendCertificate(stack.databaseUrl);
});
test.after.always(release);

interface Listed {
  id: string;
  path: string;
  status: number;
  method: string;
}

/** The share's list once it holds an exchange at `path` with `status`, and that exchange's detail. */
async function recorded(zId: string, path: string, status: number) {
  const found = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${zId}/requests`);
      return r.status === 200 && (r.json as Listed[]).find((e) => e.path === path && e.status === status);
    },
    { what: `${path} listed with ${status}` },
  );
  const detail = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${found.id}`);
  const body = Buffer.from(detail.json.response.body, 'base64').toString();
  return { summary: found as Listed, detail: detail.json, answer: body.startsWith('{') ? JSON.parse(body) : body };
}

const header = (pairs: [string, string][], name: string) => pairs.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);

test.serial('mutual TLS: a request without a client certificate is answered 403 and listed with the reason', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, mutualTls: true, inspect: true });
  const r = await edgeRequest(edge.httpPort!, host, {
    path: '/mtls',
    headers: {
      authorization: 'Bearer never-kept',
      'x-visible': 'kept',
      'x-forwarded-email': 'admin@example.com',
      x_forwarded_email: 'admin@example.com',
      'x-client-certificate-name': 'admin',
    },
  });
  t.is(r.status, 403);
  const { summary, detail, answer } = await recorded(zId, '/mtls', 403);
  t.is(summary.method, 'GET');
  t.is(answer.error, 'forbidden');
  t.deepEqual(header(detail.response.headers, 'edgehub-error-code'), ['EH_MTLS_REQUIRED'], 'recorded with the code it went out with');
  t.deepEqual(header(detail.request.headers, 'authorization'), ['[redacted]']);
  t.deepEqual(header(detail.request.headers, 'x-visible'), ['kept']);
  t.false(JSON.stringify(detail).includes('never-kept'));
  // an identity the client claimed is not kept, so that a replay of it cannot carry it to the target
  t.false(JSON.stringify(detail.request.headers).includes('admin'), JSON.stringify(detail.request.headers));
  t.deepEqual(header(detail.response.headers, 'content-type'), ['application/json']);
});

test.serial('over HTTP/2 too; a replay of a refused request reaches the target without the identity its client claimed', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, mutualTls: true, inspect: true });
  const session = await h2Session(edge.httpsPort!, { servername: host });
  try {
    const r = await h2Request(session, { ':authority': host, ':path': '/h2-refused', 'x-forwarded-email': 'admin@example.com', 'x-visible': 'kept' });
    t.is(r.status, 403);
  } finally {
    session.close();
  }
  const { summary, detail } = await recorded(zId, '/h2-refused', 403);
  t.deepEqual(
    detail.request.headers.filter(([name]: [string, string]) => name.startsWith(':') || name === 'x-forwarded-email'),
    [],
  );
  t.deepEqual(header(detail.request.headers, 'x-visible'), ['kept']);
  const replay = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${summary.id}/replay`);
  t.is(replay.status, 201, replay.text);
  t.is(replay.json.status, 200);
  const sent = received.get('/h2-refused');
  t.is(sent?.['x-visible'], 'kept');
  t.is(sent?.['x-forwarded-email'], undefined);
});

test.serial('the egress policy: a denied target is answered 403 and listed with the reason', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: `http://127.0.0.2:${backend.port}`, inspect: true });
  const r = await edgeRequest(edge.httpPort!, host, { method: 'POST', path: '/egress', body: 'sent' });
  t.is(r.status, 403);
  const { summary, detail } = await recorded(zId, '/egress', 403);
  t.is(summary.method, 'POST');
  t.deepEqual(header(detail.response.headers, 'edgehub-error-code'), ['EH_EGRESS_DENIED']);
});

test.serial('no agent connected: 502, listed with the reason', async (t) => {
  const env = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'agents only', reach: 'agent' } });
  t.is(env.status, 201, env.text);
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, envZId: env.json.envZId, inspect: true });
  const r = await edgeRequest(edge.httpPort!, host, { path: '/agentless' });
  t.is(r.status, 502);
  const { detail } = await recorded(zId, '/agentless', 502);
  t.deepEqual(header(detail.response.headers, 'edgehub-error-code'), ['EH_NO_AGENT']);
});

test.serial('admission: a hub over its requests in progress is answered 503, listed; the held ones are listed when they end', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const holding = [edgeRequest(edge.httpPort!, host, { path: '/hold' }), edgeRequest(edge.httpPort!, host, { path: '/hold' })];
  await waitFor(async () => held.length === 2, { what: 'two requests held at the target' });
  const r = await edgeRequest(edge.httpPort!, host, { path: '/third' });
  t.is(r.status, 503);
  release();
  t.deepEqual(
    (await Promise.all(holding)).map((a) => a.status),
    [200, 200],
  );
  const { answer } = await recorded(zId, '/third', 503);
  t.is(answer.error, 'overloaded');
  await recorded(zId, '/hold', 200);
});

test.serial('login: a client without a session is answered 401, listed; the login callback is listed without its query', async (t) => {
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: {
      name: 'corp',
      type: 'OIDC',
      config: { clientId: 'placeholder', clientSecret: 'placeholder', issuerUrl: 'http://127.0.0.1:9', scopes: ['openid', 'email'] },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, authProviderId: provider.json.id, inspect: true });
  await waitFor(async () => edge.routes.lookup(host)?.auth?.id === provider.json.id, { what: 'the edge routing the share with its provider' });
  const r = await edgeRequest(edge.httpPort!, host, { path: '/private', headers: { accept: 'application/json', cookie: 'app=never-kept' } });
  t.is(r.status, 401);
  const { detail, answer } = await recorded(zId, '/private', 401);
  t.is(answer.error, 'unauthorized');
  t.deepEqual(header(detail.request.headers, 'cookie'), ['[redacted]']);
  const callback = await edgeRequest(edge.httpPort!, host, { path: '/.edgehub/oauth/callback?code=one-time-code&state=s' });
  t.is(callback.status, 403, callback.text);
  const listed = await recorded(zId, '/.edgehub/oauth/callback?[redacted]', 403);
  t.false(JSON.stringify(listed).includes('one-time-code'));
  // the share itself is never reached
  t.is((await hub.call('GET', `${hub.h}/shares/${zId}/requests`)).json.filter((e: Listed) => e.status === 200).length, 0);
});

test.serial('a share without inspect records none of its refusals', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, mutualTls: true });
  t.is((await edgeRequest(edge.httpPort!, host, { path: '/quiet' })).status, 403);
  // an inspected share's refusal sent after it is listed: the capture has seen the first one end
  const inspected = await routedShare(edge, hub, { target: backend.url, mutualTls: true, inspect: true });
  t.is((await edgeRequest(edge.httpPort!, inspected.host, { path: '/after' })).status, 403);
  await recorded(inspected.zId, '/after', 403);
  t.deepEqual((await hub.call('GET', `${hub.h}/shares/${zId}/requests`)).json, []);
});

/** A WebSocket upgrade request on a raw socket: what came back once the edge closed it, or its 101 head and the echo of `ping`. */
function upgradeRequest(port: number, host: string, path: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const lines = Object.entries({
      host,
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
      ...headers,
    });
    socket.write(`GET ${path} HTTP/1.1\r\n${lines.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (text.startsWith('HTTP/1.1 101') && text.includes('\r\n\r\n')) {
        if (!text.endsWith('ping')) return void (text.endsWith('\r\n\r\n') && socket.write('ping'));
        socket.end();
      }
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    // a connection the edge leaves open fails the test here rather than hanging the file
    setTimeout(() => {
      reject(new Error(`the connection stayed open; received: ${text}`));
      socket.destroy();
    }, 10_000).unref();
  });
}

test.serial("WebSocket upgrades: the edge's refusals are listed with their answer (egress policy, login); one carried through is not", async (t) => {
  // the egress policy, on the raw socket (answerSocket)
  const denied = await routedShare(edge, hub, { target: `http://127.0.0.2:${backend.port}`, inspect: true });
  const refused = await upgradeRequest(edge.httpPort!, denied.host, '/ws/denied', { authorization: 'Bearer ws-secret' });
  t.regex(refused, /^HTTP\/1\.1 403 /);
  const { summary, detail } = await recorded(denied.zId, '/ws/denied', 403);
  t.is(summary.method, 'GET');
  t.deepEqual(header(detail.response.headers, 'edgehub-error-code'), ['EH_EGRESS_DENIED']);
  t.deepEqual(header(detail.request.headers, 'upgrade'), ['websocket']);
  t.deepEqual(header(detail.request.headers, 'authorization'), ['[redacted]']);
  t.deepEqual(header(detail.response.headers, 'content-type'), ['application/json']);
  t.false(JSON.stringify(detail).includes('ws-secret'));

  // login, answered on a response bound to the socket
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: {
      name: 'corp-ws',
      type: 'OIDC',
      config: { clientId: 'placeholder', clientSecret: 'placeholder', issuerUrl: 'http://127.0.0.1:9', scopes: ['openid', 'email'] },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const login = await routedShare(edge, hub, { target: backend.url, authProviderId: provider.json.id, inspect: true });
  await waitFor(async () => edge.routes.lookup(login.host)?.auth?.id === provider.json.id, { what: 'the edge routing the share with its provider' });
  t.regex(await upgradeRequest(edge.httpPort!, login.host, '/ws/private', { accept: 'application/json' }), /^HTTP\/1\.1 401 /);
  t.is((await recorded(login.zId, '/ws/private', 401)).answer.error, 'unauthorized');

  // carried through to a target that takes it: a stream, not an exchange, so not listed
  const target = net.createServer((socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
      socket.on('data', (chunk) => socket.write(chunk));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const carried = await routedShare(edge, hub, { target: `http://127.0.0.1:${(target.address() as net.AddressInfo).port}`, inspect: true });
  const text = await upgradeRequest(edge.httpPort!, carried.host, '/ws/carried');
  t.regex(text, /^HTTP\/1\.1 101 /);
  t.true(text.endsWith('ping'), 'the spliced connection carries data both ways');
  // a refusal sent after it is listed, so the capture has seen the upgrade end
  t.regex(await upgradeRequest(edge.httpPort!, denied.host, '/ws/after'), /^HTTP\/1\.1 403 /);
  await recorded(denied.zId, '/ws/after', 403);
  await edge.inspection!.capture.flushed();
  t.deepEqual((await hub.call('GET', `${hub.h}/shares/${carried.zId}/requests`)).json, []);
  target.close();
});
