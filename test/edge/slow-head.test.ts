import net from 'node:net';
import tls from 'node:tls';
import test from 'ava';
import { publicFrontendCertificate, useTestEdge } from '../helpers/edge.js';
import { useStack, waitFor } from '../helpers/stack.js';

/**
 * A client that sends its request head a little at a time (a slow-headers attack) is answered 408 and closed after
 * HUB_EDGE_HEADERS_TIMEOUT_MS, over plain HTTP and over TLS alike. The HTTP/1.1 server behind the TLS listener is handed
 * its connections and never listens itself, and node:http enforced no head timeout there: a TLS client kept its
 * connection for as long as it trickled bytes.
 */

const stack = useStack(test, { env: { HUB_EDGE_HEADERS_TIMEOUT_MS: '1000' } });
const edge = useTestEdge(test, stack);
test.before(async () => {
  await publicFrontendCertificate(stack.databaseUrl);
  // the edge serves it once it heard of it
  await waitFor(
    async () => {
      const socket = tls.connect({ host: '127.0.0.1', port: edge.httpsPort!, servername: 'slow.share.localhost', rejectUnauthorized: false });
      const ok = await new Promise<boolean>((resolve) => {
        socket.once('secureConnect', () => resolve(true));
        socket.once('error', () => resolve(false));
      });
      socket.destroy();
      return ok;
    },
    { what: 'a TLS handshake with the edge' },
  );
});

/** Opens a connection, sends an unfinished head and then one more header byte a second; what became of it after `waitMs`. */
function trickle(socket: net.Socket, waitMs: number): Promise<{ closed: boolean; answer: string }> {
  return new Promise((resolve) => {
    let answer = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    socket.write('GET / HTTP/1.1\r\nHost: slow.share.localhost\r\nX-Slow: ');
    const dribble = setInterval(() => {
      if (!closed) socket.write('a');
    }, 1000);
    setTimeout(() => {
      clearInterval(dribble);
      const outcome = { closed, answer };
      socket.destroy();
      resolve(outcome);
    }, waitMs);
  });
}

test('plain HTTP: a head still unfinished after the timeout is answered 408 and closed', async (t) => {
  const socket = net.connect(edge.httpPort!, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  const outcome = await trickle(socket, 8000);
  t.true(outcome.closed, 'closed by the edge');
  t.regex(outcome.answer, /^HTTP\/1\.1 408 /);
});

test('over TLS: a head still unfinished after the timeout is answered 408 and closed', async (t) => {
  const socket = tls.connect({
    host: '127.0.0.1',
    port: edge.httpsPort!,
    servername: 'slow.share.localhost',
    rejectUnauthorized: false,
    ALPNProtocols: ['http/1.1'],
  });
  await new Promise((r) => socket.once('secureConnect', r));
  const outcome = await trickle(socket, 8000);
  t.true(outcome.closed, 'closed by the edge');
  t.regex(outcome.answer, /^HTTP\/1\.1 408 /);
});
