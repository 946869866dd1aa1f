/**
 * HTTP/2 for clients on the edge's TLS listener, against HTTP/1.1 on the same listener: the same requests to one
 * recording target give the same target view and the same metering; :authority and host, pseudo-fields, cookies
 * and connection-specific fields as RFC 9113 says; mutual TLS, login, limits and the egress policy over HTTP/2.
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import https from 'node:https';
import test from 'ava';
import { publicFrontendCertificate, readBody, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { FLAG, FRAME, frame, getHeaders, h2Request, h2Session, rawH2 } from '../helpers/h2.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { keyAndCsr } from '../helpers/tlsClient.js';
import type { UsageRow } from '../../shared/metrics/store.js';
import { assertRefused } from '../helpers/refusals.js';
import { rawTarget } from '../helpers/raw.js';

const stack = useStack(test, { env: { HUB_EDGE_HUB_MAX_CONNECTIONS: '6', HUB_EDGE_FLUSH_MS: '600000' } });
const stored: UsageRow[] = [];

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
const seen = new Map<string, Seen>();
const holds = new Set<http.ServerResponse>();
const backend = useBackend(test, stack, (req, res) => {
  if (req.url === '/hold') {
    // an answer that never ends: the open stream revocation must close
    holds.add(res);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('open');
    return;
  }
  void readBody(req).then((body) => {
    const id = String(req.headers['x-test-id']);
    seen.set(id, { method: req.method!, url: req.url!, headers: req.headers, body: createHash('sha256').update(body).digest('hex') + `/${body.length}` });
    const answer = Buffer.alloc(Number(req.headers['x-answer-bytes'] ?? 10), 'a');
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-answer': 'yes' });
    res.end(answer);
  });
});
stack.onStop(async () => holds.forEach((r) => r.destroy()));
const edge = useTestEdge(test, stack, { store: async (rows) => void stored.push(...rows) });
let hub: HubFixture;

test.before(async () => {
  hub = await stack.hub({ name: 'h2-a' });
  await publicFrontendCertificate(stack.databaseUrl);
});

/** A request over HTTP/1.1 on the TLS listener (its own connection). */
function h1(host: string, path: string, headers: Record<string, string>, body?: Buffer, chunked = false, tlsOptions: { cert?: string; key?: string } = {}) {
  return new Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders; alpn: string | false | null }>((resolve, reject) => {
    const options: https.RequestOptions = {
      host: '127.0.0.1',
      port: edge.httpsPort,
      servername: host,
      rejectUnauthorized: false,
      method: body ? 'POST' : 'GET',
      path,
      agent: false,
      headers: { host, ...headers },
      ...tlsOptions,
    };
    // the edge offers h2 first: this client asks for http/1.1 alone
    Object.assign(options, { ALPNProtocols: ['http/1.1'] });
    const req = https.request(options, (res) => {
      const alpn = (res.socket as import('node:tls').TLSSocket).alpnProtocol;
      void readBody(res).then((b) => resolve({ status: res.statusCode!, body: b, headers: res.headers, alpn }));
    });
    req.on('error', reject);
    if (body && chunked) {
      req.write(body.subarray(0, 1000));
      req.end(body.subarray(1000));
    } else req.end(body);
  });
}

const CASES: { id: string; path: string; headers: Record<string, string>; body?: Buffer; length?: boolean }[] = [
  { id: 'get', path: '/a/b?c=1&d=%20', headers: { 'x-custom': 'one', accept: '*/*' } },
  { id: 'post', path: '/upload', headers: { 'content-type': 'application/json', 'x-custom': 'two' }, body: Buffer.alloc(100_000, 'p'), length: true },
  { id: 'chunked', path: '/stream', headers: { 'content-type': 'text/plain' }, body: Buffer.alloc(5000, 'q'), length: false },
  { id: 'cookies', path: '/c', headers: { cookie: 'a=1; b=2' } },
  { id: 'forged', path: '/f', headers: { 'x-forwarded-for': '6.6.6.6', 'x-client-certificate-name': 'forged', via: '1.1 elsewhere' } },
];

test.serial('the same requests over h2 and HTTP/1.1: the same target view (method, path, headers after rewriting, body) and the same metering', async (t) => {
  const one = await routedShare(edge, hub, { name: 'h1share', target: backend.url });
  const two = await routedShare(edge, hub, { name: 'h2share', target: backend.url });
  // HTTP/1.1: what the client wrote is what is metered; the edge offers h2 first, so http/1.1 is this client's choice
  let h1Body = 0;
  for (const c of CASES) {
    const framing: Record<string, string> = c.length === false ? { 'transfer-encoding': 'chunked' } : {};
    const r = await h1(one.host, c.path, { ...c.headers, ...framing, 'x-test-id': `h1-${c.id}`, 'x-answer-bytes': '300' }, c.body, c.length === false);
    t.is(r.status, 200);
    t.is(r.alpn, 'http/1.1');
    h1Body += c.body?.length ?? 0;
  }
  const session = await h2Session(edge.httpsPort!, { servername: two.host });
  t.is((session.socket as import('node:tls').TLSSocket).alpnProtocol, 'h2');
  let h2Head = 0;
  for (const c of CASES) {
    const headers: Record<string, string | string[]> = {
      ':method': c.body ? 'POST' : 'GET',
      ':path': c.path,
      ':authority': two.host,
      ...c.headers,
      'x-test-id': `h2-${c.id}`,
      'x-answer-bytes': '300',
    };
    // over HTTP/2 a cookie may come as several fields (RFC 9113 8.2.3): the target gets them on one line
    if (c.id === 'cookies') headers.cookie = ['a=1', 'b=2'];
    if (c.length) headers['content-length'] = String(c.body!.length);
    const body = c.body ? (c.length ? c.body : [c.body.subarray(0, 1000), c.body.subarray(1000)]) : undefined;
    const r = await h2Request(session, headers, body);
    t.is(r.status, 200, r.text);
    t.is(r.headers['x-answer'], 'yes');
    t.is(r.body.length, 300);
    for (const [name, value] of Object.entries(r.sent)) for (const v of [value].flat()) h2Head += name.length + String(v).length + 4;
  }
  session.close();
  for (const c of CASES) {
    const a = seen.get(`h1-${c.id}`)!;
    const b = seen.get(`h2-${c.id}`)!;
    t.truthy(a && b, c.id);
    const view = (s: Seen, host: string) => {
      const headers = { ...s.headers };
      delete headers['x-test-id'];
      t.is(headers.host, host, `${c.id}: the target sees the share's host`);
      t.is(headers['x-forwarded-host'], host);
      headers.host = headers['x-forwarded-host'] = 'HOST';
      // the framing of a body of unknown length is the HTTP client's choice from the body it sends (both are whole)
      if (c.length === false) delete headers['content-length'], delete headers['transfer-encoding'];
      return { method: s.method, url: s.url, headers, body: s.body };
    };
    t.deepEqual(view(b, two.host), view(a, one.host), c.id);
  }
  t.is(seen.get('h2-forged')!.headers['x-forwarded-for'], '127.0.0.1');
  t.is(seen.get('h2-forged')!.headers['x-client-certificate-name'], undefined);
  t.is(seen.get('h2-cookies')!.headers.cookie, 'a=1; b=2');
  t.is(seen.get('h2-chunked')!.headers['transfer-encoding'], 'chunked');

  await edge.meter.flush();
  const sum = (zId: string) => stored.filter((r) => r.shareId === zId).reduce((s, r) => ({ rx: s.rx + r.rx, tx: s.tx + r.tx }), { rx: 0, tx: 0 });
  const m1 = sum(one.zId);
  const m2 = sum(two.zId);
  // bodies are counted alike; heads differ only by framing (HTTP/1.1 lines against HTTP/2 fields as lines)
  const bodies = h1Body;
  t.true(m1.rx > bodies && m2.rx > bodies, `rx ${JSON.stringify({ m1, m2, bodies })}`);
  t.is(m2.rx, bodies + h2Head, 'over h2: the request fields (as lines) and bodies');
  t.true(Math.abs(m1.rx - m2.rx) < CASES.length * 150, `rx h1 ${m1.rx} h2 ${m2.rx}`);
  t.true(m1.tx >= CASES.length * 300 && m2.tx >= CASES.length * 300, `tx ${JSON.stringify({ m1, m2 })}`);
  t.true(Math.abs(m1.tx - m2.tx) < CASES.length * 150, `tx h1 ${m1.tx} h2 ${m2.tx}`);
});

test.serial(':authority routes; a host field naming another host is malformed (400), the same host is fine; unknown :authority is 404', async (t) => {
  const share = await routedShare(edge, hub, { name: 'auth', target: backend.url });
  const other = await routedShare(edge, hub, { name: 'other', target: backend.url });
  const session = await h2Session(edge.httpsPort!, { servername: share.host });
  const ok = await h2Request(session, { ':authority': share.host, 'x-test-id': 'auth-ok' });
  t.is(ok.status, 200);
  const same = await h2Request(session, { ':authority': share.host, host: share.host.toUpperCase(), 'x-test-id': 'auth-same' });
  t.is(same.status, 200);
  t.is(seen.get('auth-same')!.headers.host, share.host.toUpperCase());
  const differs = await h2Request(session, { ':authority': share.host, host: other.host, 'x-test-id': 'auth-differs' });
  assertRefused(t, differs, 400, 'bad_request', 'EH_REQUEST_MALFORMED', ':authority'); // names the pseudo-header it disagrees with
  t.false(seen.has('auth-differs'));
  // the connection serves another share too (a wildcard certificate lets clients coalesce)
  const coalesced = await h2Request(session, { ':authority': other.host, 'x-test-id': 'auth-other' });
  t.is(coalesced.status, 200);
  const unknown = await h2Request(session, { ':authority': 'nope.share.localhost' });
  t.is(unknown.status, 404);
  t.is(unknown.json.error, 'not_found');
  session.close();
});

test.serial(
  'connection-specific fields, te other than trailers and upper-case names are stream errors (PROTOCOL_ERROR), never reaching the target',
  async (t) => {
    const share = await routedShare(edge, hub, { name: 'malformed', target: backend.url });
    const raw = await rawH2(edge.httpsPort!, share.host);
    const cases: [string, string][] = [
      ['connection', 'keep-alive'],
      ['keep-alive', 'timeout=5'],
      ['transfer-encoding', 'chunked'],
      ['upgrade', 'websocket'],
      ['te', 'gzip'],
      ['X-Upper', 'case'],
    ];
    let id = 1;
    for (const field of cases) {
      raw.send(getHeaders(id, share.host, [field, ['x-test-id', `malformed-${id}`]]));
      const reset = await raw.next((f) => f.stream === id && (f.type === FRAME.RST_STREAM || f.type === FRAME.HEADERS));
      t.is(reset.type, FRAME.RST_STREAM, `${field[0]}: reset`);
      t.is(reset.payload.readUInt32BE(0), 1, `${field[0]}: PROTOCOL_ERROR`);
      id += 2;
    }
    // te: trailers is allowed, and the connection still serves
    raw.send(
      getHeaders(id, share.host, [
        ['te', 'trailers'],
        ['x-test-id', 'te-trailers'],
      ]),
    );
    const answer = await raw.next((f) => f.stream === id && f.type === FRAME.HEADERS);
    t.is(answer.type, FRAME.HEADERS);
    t.true(seen.has('te-trailers'));
    t.is(seen.get('te-trailers')!.headers.te, undefined, 'te is hop-by-hop towards an HTTP/1.1 target');
    for (let i = 1; i < id; i += 2) t.false(seen.has(`malformed-${i}`));
    raw.socket.destroy();
  },
);

test.serial(
  'mutual TLS over h2: a hub certificate passes with its identity, none is 403; deleting it closes the open stream and the session within 2 s',
  async (t) => {
    const share = await routedShare(edge, hub, { name: 'mtls', target: backend.url, mutualTls: true });
    const { keyPem, csrPem } = await keyAndCsr('/CN=h2-laptop');
    const created = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'h2-laptop', value: csrPem } });
    t.is(created.status, 201, created.text);
    const cert = (await hub.call('GET', `${hub.h}/client-certificates/${created.json.id}`)).json.value;
    await waitFor(
      async () => {
        const s = await h2Session(edge.httpsPort!, { servername: share.host, cert, key: keyPem });
        const r = await h2Request(s, { ':authority': share.host, 'x-test-id': 'mtls-ok' });
        s.close();
        return r.status === 200;
      },
      { what: 'the certificate admitted' },
    );
    t.is(seen.get('mtls-ok')!.headers['x-client-certificate-name'], 'h2-laptop');
    const anonymous = await h2Session(edge.httpsPort!, { servername: share.host });
    const refused = await h2Request(anonymous, { ':authority': share.host });
    t.is(refused.status, 403);
    anonymous.close();

    const session = await h2Session(edge.httpsPort!, { servername: share.host, cert, key: keyPem });
    const stream = session.request({ ':method': 'GET', ':path': '/hold', ':authority': share.host });
    stream.on('error', () => undefined);
    await new Promise((resolve) => stream.once('response', resolve));
    const sessionClosed = new Promise<void>((resolve) => session.once('close', () => resolve()));
    const streamClosed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
    const deleted = Date.now();
    t.is((await hub.call('DELETE', `${hub.h}/client-certificates/${created.json.id}`)).status, 200);
    await Promise.all([streamClosed, sessionClosed]);
    t.true(Date.now() - deleted < 2000, `closed after ${Date.now() - deleted} ms`);
  },
);

test.serial('per-hub admission over h2: streams beyond the hub limit are answered 503 while the first are open', async (t) => {
  const share = await routedShare(edge, hub, { name: 'limits', target: backend.url });
  const session = await h2Session(edge.httpsPort!, { servername: share.host });
  const open = [];
  for (let i = 0; i < 6; i++) {
    const s = session.request({ ':method': 'GET', ':path': '/hold', ':authority': share.host });
    s.on('error', () => undefined);
    open.push(s);
    await new Promise((resolve) => s.once('response', resolve));
  }
  const over = await h2Request(session, { ':authority': share.host });
  t.is(over.status, 503);
  t.is(over.json.error, 'overloaded');
  for (const s of open) s.close();
  await waitFor(async () => (await h2Request(session, { ':authority': share.host, 'x-test-id': 'limits-after' })).status === 200, { what: 'admitted again' });
  session.close();
});

test.serial('the egress policy holds over h2: a denied target is 403', async (t) => {
  const share = await routedShare(edge, hub, { name: 'egress', target: 'http://169.254.169.254/latest' });
  const session = await h2Session(edge.httpsPort!, { servername: share.host });
  const r = await h2Request(session, { ':authority': share.host });
  t.is(r.status, 403);
  t.is(r.json.error, 'forbidden');
  session.close();
});

test.serial('login over h2: a browser is sent to the provider, another client gets 401', async (t) => {
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: { name: 'gh', type: 'GITHUB', config: { clientId: 'cid', clientSecret: 'secret-value' }, emailPatterns: ['*@example.com'] },
  });
  t.is(provider.status, 201, provider.text);
  const share = await routedShare(edge, hub, { name: 'login', target: backend.url, authProviderId: provider.json.id });
  const session = await h2Session(edge.httpsPort!, { servername: share.host });
  const api = await h2Request(session, { ':authority': share.host, accept: 'application/json' });
  t.is(api.status, 401);
  const browser = await h2Request(session, { ':authority': share.host, accept: 'text/html', ':path': '/page?x=1' });
  t.is(browser.status, 302);
  t.regex(String(browser.headers.location), /\/login\/oauth\/authorize\?/);
  t.regex(String(browser.headers['set-cookie']), /HttpOnly/i);
  session.close();
});

test.serial('a request ending its stream with HEADERS carries no body; DATA after headers is the body', async (t) => {
  const share = await routedShare(edge, hub, { name: 'bodies', target: backend.url });
  const raw = await rawH2(edge.httpsPort!, share.host);
  raw.send(
    frame(
      FRAME.HEADERS,
      FLAG.END_HEADERS,
      1,
      (await import('../helpers/h2.js')).headerBlock([
        [':method', 'PUT'],
        [':scheme', 'https'],
        [':path', '/put'],
        [':authority', share.host],
        ['x-test-id', 'raw-put'],
      ]),
    ),
    frame(FRAME.DATA, 0, 1, Buffer.from('hello ')),
    frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('world')),
  );
  await raw.next((f) => f.stream === 1 && f.type === FRAME.HEADERS);
  t.is(seen.get('raw-put')!.body, createHash('sha256').update('hello world').digest('hex') + '/11');
  t.is(seen.get('raw-put')!.headers['transfer-encoding'], 'chunked');
  raw.socket.destroy();
});

test.serial("a target's answer with an empty reason phrase keeps its header fields over h2, as over HTTP/1.1", async (t) => {
  // HTTP/1.1's status line may end right after the code's space: "HTTP/1.1 200 " (RFC 9112 4)
  const lines = ['HTTP/1.1 200 \r\n', 'HTTP/1.1 201 Created\r\n'];
  const target = await rawTarget((head, _index, socket) => {
    const line = head.includes('x-created: 1') ? lines[1] : lines[0];
    socket.write(`${line}x-answer: kept\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok`);
  });
  try {
    const share = await routedShare(edge, hub, { name: 'reasons', target: target.url });
    const session = await h2Session(edge.httpsPort!, { servername: share.host });
    try {
      const bare = await h2Request(session, { ':authority': share.host, ':path': '/' });
      t.is(bare.status, 200);
      t.is(bare.headers['x-answer'], 'kept');
      t.is(bare.headers['content-type'], 'text/plain');
      t.is(bare.text, 'ok');
      const named = await h2Request(session, { ':authority': share.host, ':path': '/', 'x-created': '1' });
      t.is(named.status, 201);
      t.is(named.headers['x-answer'], 'kept');
    } finally {
      session.destroy();
    }
    const overH1 = await h1(share.host, '/', {});
    t.is(overH1.status, 200);
    t.is(overH1.headers['x-answer'], 'kept');
  } finally {
    await target.close();
  }
});
