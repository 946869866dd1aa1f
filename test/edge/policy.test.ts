/**
 * Shares' traffic policies at the edge, through real sockets: the IP rules on the client addresses loopback gives
 * (127.0.0.x and ::1, the edge listening on both), X-Forwarded-For believed from a trusted proxy only, a rate limit
 * counted across two edge processes (Redis), basic auth, header rules as a target and a client see them, error pages
 * while the target is down, maintenance on and off, and the IP rules of a TCP share. Each change is made through the
 * API and seen by the edge within 2 s. Refusals are counted by share and reason and listed by the inspector.
 */
import { spawn } from 'node:child_process';
import http, { type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { freePort } from '../../scripts/services/index.js';
import { registry } from '../../shared/telemetry/index.js';
import { h2Request, h2Session } from '../helpers/h2.js';
import { freeRange, publicFrontendCertificate, publicFrontendId, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { rawExchange, rawTarget, recordingTarget, type Recorder } from '../helpers/raw.js';
import { scriptArgs } from '../helpers/script.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { assertRefused } from '../helpers/refusals.js';

const tcpBase = await freeRange(1);
const stack = useStack(test, { env: { HUB_EDGE_TCP_PORTS: `${tcpBase}-${tcpBase}`, HUB_EDGE_FLUSH_MS: '600000', HUB_INSPECT_HUB_SHARES: '20' } });
let edge: Edge;
let trusting: Edge;
let hub: HubFixture;
let backend: Backend;
let target: Recorder;
const cleanups: (() => Promise<unknown>)[] = [];
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
  await trusting?.stop(1000);
  await backend?.close();
  await target?.close();
});

test.before(async () => {
  // on every address, IPv4 and IPv6: clients come from 127.0.0.x (as ::ffff:127.0.0.x) and ::1
  edge = await startTestEdge({ host: '::' });
  // behind a load balancer (PROXY protocol from 127.0.0.1) and an HTTP proxy at 192.0.2.10 whose X-Forwarded-For counts
  trusting = await startTestEdge({ trustedProxies: ['127.0.0.1/32', '192.0.2.10/32'] });
  hub = await stack.hub({ name: 'policy' });
  await publicFrontendCertificate(stack.databaseUrl);
  backend = await startBackend((req, res) => res.end(`served ${req.url}`));
  target = await recordingTarget((_req, res) => res.writeHead(200, { 'x-powered-by': 'target', 'cache-control': 'public' }).end('recorded'));
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json?: unknown;
}

/** One request to the edge at `port` with `Host: host`, from the source address `from` (IPv6 when it has a colon). */
function call(port: number, host: string, options: { from?: string; path?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const from = options.from ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: from.includes(':') ? '::1' : '127.0.0.1',
        localAddress: from,
        port,
        path: options.path ?? '/',
        headers: { host, ...options.headers },
        agent: false,
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const patchPolicy = async (zId: string, policy: unknown) => {
  const r = await hub.call('PATCH', `${hub.h}/shares/${zId}`, { body: { policy } });
  if (r.status !== 200) throw new Error(`PATCH failed: ${r.status} ${r.text}`);
};

/** The edge answers `host` with `status` within 2 s (a policy change reaching it). */
const answersWithin2s = (port: number, host: string, status: number, from?: string) =>
  waitFor(async () => (await call(port, host, { from })).status === status, { timeoutMs: 2000, intervalMs: 50, what: `${host} answered ${status}` });

const refusals = async (zId: string, reason: string) => {
  const text = await registry.getSingleMetricAsString('edgehub_edge_policy_refusals_total');
  const line = text.split('\n').find((l) => l.includes(`share="${zId}"`) && l.includes(`reason="${reason}"`));
  return line ? Number(line.split(' ').pop()) : 0;
};

test.serial('IP rules: allowed and denied addresses over IPv4 and IPv6, deny wins, a forged X-Forwarded-For is ignored; counted and inspected', async (t) => {
  const { zId, host } = await routedShare(edge, hub, {
    target: backend.url,
    inspect: true,
    policy: { ipAllow: ['127.0.0.0/29', '::1/128'], ipDeny: ['127.0.0.5/32'] },
  });
  t.is((await call(edge.httpPort!, host, { from: '127.0.0.1' })).status, 200);
  t.is((await call(edge.httpPort!, host, { from: '::1' })).status, 200);
  const denied = await call(edge.httpPort!, host, { from: '127.0.0.5', path: '/denied' });
  assertRefused(t, denied, 403, 'forbidden', 'EH_POLICY_ADDRESS_DENIED');
  assertRefused(t, await call(edge.httpPort!, host, { from: '127.0.0.9' }), 403, 'forbidden', 'EH_POLICY_ADDRESS_DENIED');
  // the edge trusts no proxy: a client naming an allowed address is judged by its own
  assertRefused(
    t,
    await call(edge.httpPort!, host, { from: '127.0.0.5', headers: { 'x-forwarded-for': '127.0.0.1' } }),
    403,
    'forbidden',
    'EH_POLICY_ADDRESS_DENIED',
  );
  t.is(await refusals(zId, 'ip'), 3);
  // a WebSocket upgrade is judged the same way
  const upgrade = await new Promise<string>((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port: edge.httpPort!, localAddress: '127.0.0.5' });
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
    socket.write(
      `GET /ws HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    );
  });
  t.regex(upgrade, /^HTTP\/1\.1 403 /);
  t.regex(upgrade, /edgehub-error-code: EH_POLICY_ADDRESS_DENIED/i);
  // the inspector lists the refusal with its reason
  const listed = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${zId}/requests`);
      return r.status === 200 && (r.json as { path: string; status: number; id: string }[]).find((e) => e.path === '/denied' && e.status === 403);
    },
    { what: 'the refusal listed' },
  );
  const detail = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${listed.id}`);
  t.true(Buffer.from(detail.json.response.body, 'base64').toString().includes('127.0.0.5'));
  // a change: IPv6 denied, no allow list
  await patchPolicy(zId, { ipDeny: ['::1/128'] });
  await answersWithin2s(edge.httpPort!, host, 403, '::1');
  t.is((await call(edge.httpPort!, host, { from: '127.0.0.9' })).status, 200);
  await patchPolicy(zId, null);
  await answersWithin2s(edge.httpPort!, host, 200, '::1');
});

test.serial('an open WebSocket is closed when a change of the IP rules no longer admits its client', async (t) => {
  const ws = await rawTarget((_head, _index, socket) => socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n'));
  cleanups.push(() => ws.close());
  const { zId, host } = await routedShare(edge, hub, { target: ws.url, policy: { ipAllow: ['127.0.0.0/8'] } });
  const open = (from: string) =>
    new Promise<{ closed: Promise<void>; head: string }>((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port: edge.httpPort!, localAddress: from });
      const closed = new Promise<void>((r) => socket.once('close', () => r()));
      socket.on('error', () => undefined);
      socket.once('data', (d) => resolve({ closed, head: d.toString('latin1') }));
      socket.once('error', reject);
      socket.write(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
      cleanups.push(async () => socket.destroy());
    });
  const kept = await open('127.0.0.1');
  const dropped = await open('127.0.0.6');
  t.regex(kept.head, /^HTTP\/1\.1 101 /);
  t.regex(dropped.head, /^HTTP\/1\.1 101 /);
  await patchPolicy(zId, { ipAllow: ['127.0.0.0/8'], ipDeny: ['127.0.0.6/32'] });
  const within = <T>(p: Promise<T>, ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([p.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)))]).finally(() => clearTimeout(timer));
  };
  t.true(await within(dropped.closed, 5000), 'the denied client is closed');
  t.false(await within(kept.closed, 500), 'the admitted client stays');
});

test.serial('X-Forwarded-For counts from a trusted proxy only', async (t) => {
  const { host } = await routedShare(trusting, hub, { target: backend.url, policy: { ipAllow: ['203.0.113.0/24'] } });
  const v1 = (address: string) => `PROXY TCP4 ${address} 127.0.0.1 51234 80\r\n`;
  const request = (xff: string) => `GET / HTTP/1.1\r\nHost: ${host}\r\nX-Forwarded-For: ${xff}\r\nConnection: close\r\n\r\n`;
  // the load balancer names the HTTP proxy 192.0.2.10 (trusted): the client it names counts
  t.regex(await rawExchange(trusting.httpPort!, v1('192.0.2.10') + request('198.51.100.1, 203.0.113.5')), /^HTTP\/1\.1 200 /);
  t.regex(await rawExchange(trusting.httpPort!, v1('192.0.2.10') + request('203.0.113.5, 198.51.100.1')), /^HTTP\/1\.1 403 /);
  // the trusted proxy itself (127.0.0.1), over plain HTTP without a PROXY header: the client it names counts
  t.regex(await rawExchange(trusting.httpPort!, request('203.0.113.5')), /^HTTP\/1\.1 200 /);
  t.regex(await rawExchange(trusting.httpPort!, request('198.51.100.1')), /^HTTP\/1\.1 403 /);
  // a client behind the load balancer that is no trusted proxy: what it says goes nowhere
  t.regex(await rawExchange(trusting.httpPort!, v1('198.51.100.7') + request('203.0.113.5')), /^HTTP\/1\.1 403 /);
  // to an edge that trusts nobody
  await waitFor(async () => edge.routes.lookup(host), { timeoutMs: 2000 });
  t.is((await call(edge.httpPort!, host, { headers: { 'x-forwarded-for': '203.0.113.5' } })).status, 403);
});

/** An edge process bound to `address` (HUB_EDGE_HOST), its TLS listener off. */
async function edgeProcess(address: string, env: Record<string, string> = {}): Promise<number> {
  const httpPort = await freePort();
  const child = spawn(process.execPath, scriptArgs('edge/index.ts'), {
    env: {
      ...process.env,
      ...env,
      HUB_PROCESS: 'edge',
      HUB_EDGE_HOST: address,
      HUB_EDGE_HTTP_PORT: String(httpPort),
      HUB_EDGE_HTTPS_PORT: '0',
      HUB_EDGE_TCP_PORTS: `${tcpBase}-${tcpBase}`,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  return httpPort;
}

test.serial('a rate limit is counted across two edge processes: 429 with Retry-After past it, per client address', async (t) => {
  const otherPort = await edgeProcess('127.0.0.2');
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, policy: { rateLimit: { requests: 4, per: 'PT1H' } } });
  // the other process routes a share made after this one: it routes this one too (changes are applied in order)
  const later = { host: (await routedShare(edge, hub, { target: backend.url })).host };
  const other = (path = '/') =>
    new Promise<Answer>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.2', localAddress: '127.0.0.1', port: otherPort, path, headers: { host: path === '/ready' ? later.host : host }, agent: false },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: text.startsWith('{') ? JSON.parse(text) : undefined }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  await waitFor(async () => (await other('/ready').catch(() => ({ status: 0 }))).status === 200, { what: 'the edge process routing the shares' });
  const answers: Answer[] = [];
  for (let i = 0; i < 3; i++) {
    answers.push(await call(edge.httpPort!, host));
    answers.push(await other());
  }
  t.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 429, 429], answers.map((a) => a.status).join(' '));
  for (const refused of answers.filter((a) => a.status === 429)) {
    assertRefused(t, refused, 429, 'too_many_requests', 'EH_POLICY_RATE_LIMITED');
    t.true(Number(refused.headers['retry-after']) >= 1);
  }
  // another client address has a count of its own
  t.is((await call(edge.httpPort!, host, { from: '127.0.0.6' })).status, 200);
  t.true((await refusals(zId, 'rate_limit')) >= 1);

  // a larger limit is taken from Redis in leases (1% of it per edge): never more than the limit in all, and at most
  // a lease per edge less
  const big = await routedShare(edge, hub, { target: backend.url, policy: { rateLimit: { requests: 200, per: 'PT1H' } } });
  const ready = await routedShare(edge, hub, { target: backend.url });
  later.host = ready.host;
  await waitFor(async () => (await other('/ready').catch(() => ({ status: 0 }))).status === 200, { what: 'the edge process routing the shares' });
  const target = big.host;
  const admitted = { edge: 0, other: 0 };
  for (let i = 0; i < 130; i++) {
    if ((await call(edge.httpPort!, target, { from: '127.0.0.7' })).status === 200) admitted.edge++;
    const r = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.2', localAddress: '127.0.0.7', port: otherPort, path: '/', headers: { host: target }, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
    if (r === 200) admitted.other++;
  }
  const total = admitted.edge + admitted.other;
  t.true(total <= 200 && total >= 196, `admitted ${JSON.stringify(admitted)}`);
  t.true(admitted.edge > 0 && admitted.other > 0);

  // a change is seen by both edges within 2 s
  await patchPolicy(zId, { maintenance: true });
  await waitFor(async () => (await call(edge.httpPort!, host, { from: '127.0.0.8' })).status === 503 && (await other()).status === 503, {
    timeoutMs: 2000,
    what: 'both edges in maintenance',
  });
  t.pass();
});

test.serial('while Redis is away the rate limit holds per edge: an edge that cannot reach Redis still refuses past it', async (t) => {
  const deadRedis = await freePort();
  const port = await edgeProcess('127.0.0.3', { REDIS_URL: `redis://127.0.0.1:${deadRedis}` });
  const { host } = await routedShare(edge, hub, { target: backend.url, policy: { rateLimit: { requests: 3, per: 'PT1H' } } });
  const later = await routedShare(edge, hub, { target: backend.url });
  const get = (h: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.3', localAddress: '127.0.0.1', port, path: '/', headers: { host: h }, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  await waitFor(async () => (await get(later.host).catch(() => 0)) === 200, { what: 'the edge process without Redis routing the shares' });
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push(await get(host));
  t.deepEqual(statuses, [200, 200, 200, 429, 429]);
});

test.serial('basic auth: 401 with WWW-Authenticate without the right credentials; the target never sees them', async (t) => {
  const { host } = await routedShare(edge, hub, { target: target.url, policy: { basicAuth: [{ user: 'demo', password: 'right password' }] } });
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const before = target.requests.length;
  const attempts: Record<string, string>[] = [
    {},
    { authorization: basic('demo', 'wrong password') },
    { authorization: basic('other', 'right password') },
    { authorization: 'Bearer x' },
  ];
  for (const headers of attempts) {
    const r = await call(edge.httpPort!, host, { headers });
    assertRefused(t, r, 401, 'unauthorized', 'EH_POLICY_AUTH_REQUIRED');
    t.is(r.headers['www-authenticate'], 'Basic realm="edgehub"');
  }
  t.is(target.requests.length, before, 'nothing reached the target');
  for (let i = 0; i < 2; i++) t.is((await call(edge.httpPort!, host, { headers: { authorization: basic('demo', 'right password') } })).status, 200);
  t.is(target.requests.length, before + 2);
  t.is(target.requests.at(-1)!.headers.authorization, undefined);
});

test.serial('a rate limit by identity counts each basic auth user apart, after the credentials are checked', async (t) => {
  const { host } = await routedShare(edge, hub, {
    target: backend.url,
    policy: {
      basicAuth: [
        { user: 'ann', password: 'ann password' },
        { user: 'bob', password: 'bob password' },
      ],
      rateLimit: { requests: 2, per: 'PT1H', by: 'identity' },
    },
  });
  const as = (user: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${user} password`).toString('base64')}` });
  const statuses = async (user: string, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await call(edge.httpPort!, host, { headers: as(user) })).status);
    return out;
  };
  t.deepEqual(await statuses('ann', 3), [200, 200, 429]);
  // the same address, another user: a count of its own; wrong credentials are 401, not counted
  t.is((await call(edge.httpPort!, host)).status, 401);
  t.deepEqual(await statuses('bob', 2), [200, 200]);
});

test.serial('header rules: set and removed on the request to the target and on the answer; the edge’s own stay its own', async (t) => {
  const { host } = await routedShare(edge, hub, {
    target: target.url,
    policy: {
      requestHeaders: { set: { 'X-Team': 'blue' }, remove: ['X-Debug'] },
      responseHeaders: { set: { 'Cache-Control': 'no-store' }, remove: ['X-Powered-By'] },
    },
  });
  const r = await call(edge.httpPort!, host, { headers: { 'x-team': 'red', 'x-debug': '1', 'x-kept': 'yes', 'x-forwarded-for': '203.0.113.9' } });
  t.is(r.status, 200);
  t.is(r.headers['cache-control'], 'no-store');
  t.is(r.headers['x-powered-by'], undefined);
  const seen = target.requests.at(-1)!;
  const lines = (name: string) => seen.rawHeaders.filter((_, i) => i % 2 === 0 && seen.rawHeaders[i].toLowerCase() === name).length;
  t.is(seen.headers['x-team'], 'blue');
  t.is(lines('x-team'), 1);
  t.is(seen.headers['x-debug'], undefined);
  t.is(seen.headers['x-kept'], 'yes');
  t.is(seen.headers['x-forwarded-for'], '127.0.0.1');
});

test.serial('over HTTP/2 the same policy applies: IP rules, basic auth and header rules', async (t) => {
  const { host } = await routedShare(edge, hub, {
    target: target.url,
    policy: { basicAuth: [{ user: 'demo', password: 'right password' }], requestHeaders: { set: { 'X-Team': 'h2' } } },
  });
  const denied = await routedShare(edge, hub, { target: target.url, policy: { ipDeny: ['127.0.0.1/32'] } });
  const session = await h2Session(edge.httpsPort!, { servername: host });
  try {
    const without = await h2Request(session, { ':authority': host });
    assertRefused(t, without, 401, 'unauthorized', 'EH_POLICY_AUTH_REQUIRED');
    t.is(without.headers['www-authenticate'], 'Basic realm="edgehub"');
    const served = await h2Request(session, { ':authority': host, authorization: `Basic ${Buffer.from('demo:right password').toString('base64')}` });
    t.is(served.status, 200);
    t.is(target.requests.at(-1)!.headers['x-team'], 'h2');
    assertRefused(t, await h2Request(session, { ':authority': denied.host }), 403, 'forbidden', 'EH_POLICY_ADDRESS_DENIED');
  } finally {
    session.close();
  }
});

test.serial('error pages while the target is down, and maintenance on and off without touching the target', async (t) => {
  const closed = await freePort();
  const pages = { '502': '<h1>we are down</h1>', '503': '<h1>back soon</h1>' };
  const down = await routedShare(edge, hub, { target: `http://127.0.0.1:${closed}`, policy: { errorPages: pages } });
  const r = await call(edge.httpPort!, down.host);
  t.is(r.status, 502);
  t.is(r.text, pages['502']);
  t.regex(String(r.headers['content-type']), /^text\/html/);
  t.is(r.headers['edgehub-error-code'], 'EH_TARGET_UNREACHABLE');

  const { zId, host } = await routedShare(edge, hub, { target: target.url, policy: { errorPages: pages } });
  t.is((await call(edge.httpPort!, host)).status, 200);
  await patchPolicy(zId, { errorPages: pages, maintenance: true });
  await answersWithin2s(edge.httpPort!, host, 503);
  const before = target.requests.length;
  const m = await call(edge.httpPort!, host);
  t.is(m.status, 503);
  t.is(m.text, pages['503']);
  t.is(m.headers['edgehub-error-code'], 'EH_SHARE_MAINTENANCE');
  t.is(target.requests.length, before, 'the target was not contacted');
  // without a page of its own: the edge's answer
  await patchPolicy(zId, { maintenance: true, errorPages: { '502': 'x' } });
  await waitFor(async () => (await call(edge.httpPort!, host)).json !== undefined, { timeoutMs: 2000 });
  assertRefused(t, await call(edge.httpPort!, host), 503, 'unavailable', 'EH_SHARE_MAINTENANCE');
  await patchPolicy(zId, { maintenance: false });
  await answersWithin2s(edge.httpPort!, host, 200);
  t.true((await refusals(zId, 'maintenance')) >= 2);
});

test.serial('a TCP share applies its IP rules: a connection from elsewhere is closed with nothing relayed, each counted once', async (t) => {
  const echo = net.createServer((s) => (s.on('error', () => undefined), s.pipe(s)));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((r) => echo.close(r)));
  const created = await hub.call('POST', `${hub.h}/shares`, {
    body: {
      name: 'tcp',
      frontendIds: [await publicFrontendId(hub)],
      protocol: 'tcp',
      target: `tcp://127.0.0.1:${(echo.address() as net.AddressInfo).port}`,
      policy: { ipAllow: ['127.0.0.1/32'] },
    },
  });
  t.is(created.status, 201, created.text);
  const port = Number(new URL(created.json.frontendEndpoint).port);
  const echoed = (from: string) =>
    new Promise<string>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port, localAddress: from });
      let text = '';
      const timer = setTimeout(() => socket.destroy(), 5000);
      socket.on('connect', () => socket.write('ping'));
      socket.on('data', (d) => {
        text += d.toString();
        if (text === 'ping') socket.end();
      });
      socket.on('error', () => undefined);
      socket.on('close', () => (clearTimeout(timer), resolve(text)));
    });
  await waitFor(async () => (await echoed('127.0.0.1')) === 'ping', { what: 'the TCP share carried' });
  const before = await refusals(created.json.zId, 'ip');
  t.is(await echoed('127.0.0.5'), '');
  t.is(await echoed('127.0.0.6'), '');
  // counted once per refused connection, in the counter a request's refusal goes to (counted before the reset)
  t.is((await refusals(created.json.zId, 'ip')) - before, 2);
  await patchPolicy(created.json.zId, { ipDeny: ['127.0.0.1/32'] });
  await waitFor(async () => (await echoed('127.0.0.1')) === '', { timeoutMs: 2000, what: 'the change applied' });
  t.is(await echoed('127.0.0.5'), 'ping');
});
