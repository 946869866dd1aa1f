/**
 * Trailers of an HTTP/2 target passed on to an HTTP/1.1 client (chunked, with a trailer section): fields a trailer
 * may never carry (framing, routing, authentication, controls: Content-Length, Host, Set-Cookie, Authorization ...)
 * are dropped, the others kept, and the client reads the whole answer, its last chunk included, by the exact bytes.
 * (A trailer Content-Length that disagrees with the data makes the answer malformed for nghttp2, which resets the
 * stream: the client's answer is then cut, as for any target that resets mid-answer, never given a forged end.)
 */
import http2 from 'node:http2';
import type net from 'node:net';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { publicFrontendCertificate, routedShare, startTestEdge } from '../helpers/edge.js';
import { rawExchange } from '../helpers/raw.js';
import { type HubFixture, useStack } from '../helpers/stack.js';

const stack = useStack(test, { env: { HUB_EDGE_UPSTREAM_TIMEOUT_MS: '5000' } });
let edge: Edge;
let hub: HubFixture;
let server: http2.Http2Server | undefined;
stack.onStop(async () => {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  await edge?.stop(1000);
});

test.before(async () => {
  edge = await startTestEdge();
  hub = await stack.hub({ name: 'h2-trailers' });
  await publicFrontendCertificate(stack.databaseUrl);
});

test("a target's trailer fields that a trailer may not carry (content-length, host, set-cookie, authorization) are dropped; the HTTP/1.1 client reads every chunk", async (t) => {
  server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
    stream.on('wantTrailers', () =>
      stream.sendTrailers({
        'content-length': String('first-chunk;last-chunk'.length),
        host: 'evil.example',
        'set-cookie': 'stolen=1',
        authorization: 'Basic c3RvbGVu',
        'x-checksum': 'abc',
      }),
    );
    stream.write('first-chunk;');
    setTimeout(() => stream.end('last-chunk'), 50);
  });
  server.on('sessionError', () => undefined);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const { host } = await routedShare(edge, hub, { target: `http://127.0.0.1:${port}`, targetProtocol: 'h2' });

  const text = await rawExchange(edge.httpPort!, `GET / HTTP/1.1\r\nHost: ${host}\r\nTE: trailers\r\nConnection: close\r\n\r\n`, { timeoutMs: 5000 });
  const [head, ...rest] = text.split('\r\n\r\n');
  t.regex(head, /^HTTP\/1\.1 200 /);
  t.regex(head, /\r\ntransfer-encoding: chunked/i);
  const body = rest.join('\r\n\r\n');
  // the chunks, byte for byte, then the last chunk and the trailer section with only what a trailer may carry
  const chunks: string[] = [];
  let at = 0;
  let last = false;
  while (at < body.length) {
    const eol = body.indexOf('\r\n', at);
    const size = eol < 0 ? Number.NaN : Number.parseInt(body.slice(at, eol), 16);
    if (!Number.isInteger(size)) break;
    if (size === 0) {
      at = eol + 2;
      last = true;
      break;
    }
    chunks.push(body.slice(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  t.is(chunks.join(''), 'first-chunk;last-chunk');
  t.true(last, 'the last chunk came');
  const trailer = body.slice(at);
  t.regex(trailer, /^x-checksum: abc\r\n$/im);
  t.notRegex(trailer, /content-length|host|set-cookie|authorization|stolen|evil|c3RvbGVu/i);
  t.true(trailer.endsWith('\r\n'), 'the trailer section ends');
});
