/**
 * What a hostile target's answer may do to the client through the edge, by the exact bytes: raw targets write the
 * answers, raw clients read what arrives, and nginx (Debian's, test/helpers/nginx.ts) gets the same bytes as the
 * reference where the two should agree.
 */
import test from 'ava';
import { routedShare, useTestEdge } from '../helpers/edge.js';
import { startNginx, type Nginx } from '../helpers/nginx.js';
import { rawConversation, rawTarget } from '../helpers/raw.js';
import { useStack } from '../helpers/stack.js';
import { parseMessages } from '../helpers/wire.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000', HUB_EDGE_UPSTREAM_READ_TIMEOUT_MS: '1000' } });
const edge = useTestEdge(test, stack);
const closers: (() => Promise<void>)[] = [];
stack.onStop(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

async function raw(answer: Parameters<typeof rawTarget>[0]) {
  const r = await rawTarget(answer);
  closers.push(r.close);
  return r;
}

async function nginxFor(port: number): Promise<Nginx> {
  const nginx = await startNginx(port);
  closers.push(nginx.stop);
  return nginx;
}

const request = (host: string, method = 'GET', path = '/') => `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
const headersOf = (m: { headers: [string, string][] }, name: string) => m.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);

/** Sends `requests` on one client connection (all written at once) and parses the answers that came back. */
async function exchange(port: number, requests: { host: string; method?: string; path?: string }[]) {
  const methods = requests.map((r) => r.method ?? 'GET');
  const bytes = requests.map((r) => request(r.host, r.method, r.path)).join('');
  const { text, closedByPeer } = await rawConversation(port, bytes, {
    done: (s) => parseMessages(s, 'response', methods).messages.filter((m) => m.complete).length >= requests.length,
    timeoutMs: 4000,
  });
  return { ...parseMessages(text, 'response', methods, closedByPeer), text, closedByPeer };
}

test("a target's Set-Cookie stays on the share's own host: a Domain naming anything else is removed", async (t) => {
  const hub = await stack.hub();
  let host = '';
  const lines = () => [
    'a=1; Domain=share.localhost; Path=/',
    'b=2; domain=.SHARE.localhost',
    'c=3;  Domain = share.localhost ;HttpOnly',
    `d=4; Domain=${host}; Path=/`,
    `e=5; Domain=.${host.toUpperCase()}`,
    `f=6; Domain=${host}; Domain=share.localhost`,
    'g=7; Domain="share.localhost"',
    'h=8; Domain=localhost; Secure',
    'i=9; Domain=; Path=/x',
    'j=10; Path=/; HttpOnly; SameSite=Lax',
    `k=11; Domain=other.share.localhost`,
    `edgehub_session=forged; Domain=share.localhost; Path=/`,
  ];
  const target = await raw((_head, _i, socket) => {
    socket.write(
      `HTTP/1.1 200 OK\r\n${lines()
        .map((l) => `Set-Cookie: ${l}\r\n`)
        .join('')}Content-Length: 2\r\n\r\nok`,
    );
  });
  ({ host } = await routedShare(edge, hub, { target: target.url }));
  const { messages } = await exchange(edge.httpPort!, [{ host }]);
  t.is(messages[0].status, 200);
  t.deepEqual(headersOf(messages[0], 'set-cookie'), [
    'a=1; Path=/',
    'b=2',
    'c=3;HttpOnly',
    `d=4; Domain=${host}; Path=/`,
    `e=5; Domain=.${host.toUpperCase()}`,
    'f=6',
    'g=7',
    'h=8; Secure',
    'i=9; Path=/x',
    'j=10; Path=/; HttpOnly; SameSite=Lax',
    'k=11',
    'edgehub_session=forged; Path=/',
  ]);
  // the same through the share's host with a port and in capitals: the host is the same
  const upper = await exchange(edge.httpPort!, [{ host: `${host.toUpperCase()}:${edge.httpPort}` }]);
  t.deepEqual(headersOf(upper.messages[0], 'set-cookie').slice(0, 4), ['a=1; Path=/', 'b=2', 'c=3;HttpOnly', `d=4; Domain=${host}; Path=/`]);
});

for (const [what, status, method] of [
  ['204', 204, 'GET'],
  ['304', 304, 'GET'],
  ['HEAD answer', 200, 'HEAD'],
] as const) {
  test(`a target's ${what} with a body: the client gets the answer without the body and its connection stays usable; the target connection is discarded`, async (t) => {
    const hub = await stack.hub();
    const target = await raw((head, _i, socket) => {
      if (head.startsWith('GET /next')) return void socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext');
      const reason = status === 204 ? 'No Content' : status === 304 ? 'Not Modified' : 'OK';
      // a body the status (or the method) does not allow, in the same write as the head, then a forged answer
      socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: 5\r\nX-Mark: first\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged`);
    });
    const { host } = await routedShare(edge, hub, { target: target.url });
    const nginx = await nginxFor(target.port);
    for (const [via, port] of [
      ['edge', edge.httpPort!],
      ['nginx', nginx.port],
    ] as const) {
      const before = target.connections();
      const answer = await exchange(port, [
        { host, method },
        { host, path: '/next' },
      ]);
      t.is(answer.error, undefined, `${via}: ${answer.text}`);
      t.is(answer.messages.length, 2, `${via}: ${answer.text}`);
      t.is(answer.messages[0].status, status, via);
      t.deepEqual(headersOf(answer.messages[0], 'x-mark'), ['first'], via);
      t.is(answer.messages[0].body, '', `${via}: no body`);
      t.is(answer.messages[1].status, 200, via);
      t.is(answer.messages[1].body, 'next', `${via}: the next answer on the same client connection is the target's real one`);
      t.false(answer.text.includes('forged'), via);
      t.true(target.connections() > before, `${via}: the next request went on a new target connection`);
    }
  });
}

test('a trailer carrying Content-Length (or other fields a trailer may not hold) does not cut the chunked body', async (t) => {
  const hub = await stack.hub();
  const target = await raw((head, _i, socket) => {
    if (head.startsWith('GET /next')) return void socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext');
    const trailers = head.startsWith('GET /malformed')
      ? 'Content-Length : 3\r\nX-Ok: 1\r\n'
      : 'Content-Length: 3\r\nTransfer-Encoding: chunked\r\nHost: evil\r\nX-Ok: 1\r\n';
    socket.write(
      `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length, Transfer-Encoding, Host\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n${trailers}\r\n`,
    );
  });
  const { host } = await routedShare(edge, hub, { target: target.url });
  const nginx = await nginxFor(target.port);
  for (const [via, port, path] of [
    ['edge', edge.httpPort!, '/'],
    ['nginx', nginx.port, '/'],
    ['edge', edge.httpPort!, '/malformed'],
  ] as const) {
    const answer = await exchange(port, [
      { host, path },
      { host, path: '/next' },
    ]);
    t.is(answer.error, undefined, `${via}: ${answer.text}`);
    t.is(answer.messages[0].status, 200, via);
    t.is(answer.messages[0].body, 'hello world', `${via}: the whole body`);
    t.deepEqual(answer.messages[0].trailers, [], `${via}: trailers are not passed on`);
    t.is(answer.messages[1]?.body, 'next', via);
  }
});
