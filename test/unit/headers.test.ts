import test from 'ava';
import type { IncomingMessage } from 'node:http';
import { connectionTokens, countOf, declaredLength, hasBody, requestHeaderLines, responseHeaderLines } from '../../edge/headers.js';

/** Only what the header functions read of a request: its raw lines, the parsed headers and the client's address. */
function request(raw: string[], remoteAddress = '::ffff:198.51.100.7'): IncomingMessage {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    headers[name] = headers[name] === undefined ? raw[i + 1] : `${headers[name]}, ${raw[i + 1]}`;
  }
  return { rawHeaders: raw, headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

const pairs = (lines: string[]) => Array.from({ length: lines.length / 2 }, (_, i) => [lines[2 * i], lines[2 * i + 1]]);

test('towards the target: hop-by-hop, Connection-listed, underscored and edge-only headers dropped; X-Forwarded-* and Via added', (t) => {
  const req = request([
    'Host',
    'app.share.localhost',
    'Connection',
    'keep-alive, X-Secret, Host',
    'X-Secret',
    's',
    'Keep-Alive',
    '5',
    'TE',
    'trailers',
    'Transfer-Encoding',
    'chunked',
    'Content-Length',
    '3',
    'Expect',
    '100-continue',
    'X_Client_Certificate_Name',
    'forged',
    'X-Forwarded-For',
    '1.2.3.4',
    'X-Client-Certificate-Name',
    'forged',
    'Via',
    '1.1 other',
    'Accept',
    'text/html',
    'accept',
    'application/json',
  ]);
  const out = pairs(requestHeaderLines(req, { secure: true, identity: { 'x-forwarded-email': 'a@example.com' } }, '1.1 edge-a'));
  t.deepEqual(out, [
    ['Host', 'app.share.localhost'],
    ['Accept', 'text/html'],
    ['accept', 'application/json'],
    ['x-forwarded-for', '198.51.100.7'],
    ['x-forwarded-proto', 'https'],
    ['x-forwarded-host', 'app.share.localhost'],
    ['via', '1.1 other, 1.1 edge-a'],
    ['x-forwarded-email', 'a@example.com'],
  ]);
});

test('towards the target: the edge session cookie replaced or dropped; an identity value that cannot be a header is refused', (t) => {
  const req = request(['Host', 'h', 'Cookie', 'edgehub_session=x; a=1']);
  t.deepEqual(
    pairs(requestHeaderLines(req, { secure: false, cookie: { value: 'a=1' } }, 'v')).filter(([n]) => n.toLowerCase() === 'cookie'),
    [['cookie', 'a=1']],
  );
  t.deepEqual(
    pairs(requestHeaderLines(req, { secure: false, cookie: { value: undefined } }, 'v')).filter(([n]) => n.toLowerCase() === 'cookie'),
    [],
  );
  t.throws(() => requestHeaderLines(req, { secure: false, identity: { 'x-forwarded-email': 'a\r\nx: y' } }, 'v', { target: new URL('http://t:8080') }), {
    code: 'EH_TARGET_UNREACHABLE',
    message: "the share's target t:8080 could not be reached (EDGE_INVALID_HEADER)",
  } as never);
});

test('towards the client: hop-by-hop and Connection-listed headers dropped, never Content-Length; upgrades kept when asked', (t) => {
  const raw = [
    'Content-Length',
    '2',
    'Connection',
    'close, X-Internal, Content-Length',
    'X-Internal',
    '1',
    'Keep-Alive',
    'x',
    'Trailer',
    'x',
    'Upgrade',
    'websocket',
    'Set-Cookie',
    'a=1',
  ].map((s) => Buffer.from(s, 'latin1'));
  t.deepEqual(pairs(responseHeaderLines(raw)), [
    ['Content-Length', '2'],
    ['Set-Cookie', 'a=1'],
  ]);
  t.deepEqual(pairs(responseHeaderLines(raw, true)), [
    ['Content-Length', '2'],
    ['Connection', 'close, X-Internal, Content-Length'],
    ['Upgrade', 'websocket'],
    ['Set-Cookie', 'a=1'],
  ]);
});

test('small readers: Connection tokens, header counts, declared length, whether a body comes', (t) => {
  t.deepEqual(connectionTokens(['Keep-Alive, , X-A', undefined, 'x-b']), new Set(['keep-alive', 'x-a', 'x-b']));
  t.is(connectionTokens([undefined, '']), undefined);
  t.is(countOf(['Host', 'a', 'host', 'b', 'X', 'c'], 'host'), 2);
  t.is(declaredLength(request(['Content-Length', '12'])), 12);
  t.is(declaredLength(request(['Transfer-Encoding', 'chunked', 'Content-Length', '12'])), null);
  t.is(declaredLength(request([])), null);
  t.true(hasBody(request(['Transfer-Encoding', 'chunked'])));
  t.true(hasBody(request(['Content-Length', '1'])));
  t.false(hasBody(request(['Content-Length', '0'])));
  t.false(hasBody(request([])));
});
