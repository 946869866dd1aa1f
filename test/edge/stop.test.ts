/**
 * An edge's stop is bounded by its grace, whatever its clients do: a client that connected to the TLS listener and
 * never finished its handshake (the TLS server's own handshake timeout is two minutes), and one that keeps a
 * request open, are cut when the grace ends, and stop() resolves.
 */
import net from 'node:net';
import test from 'ava';
import { startTestEdge } from '../helpers/edge.js';
import { useStack } from '../helpers/stack.js';

useStack(test);

/** Resolves with how stop() ended: 'stopped', or 'hung' when it had not resolved after `limitMs`. */
function stopWithin(stop: Promise<void>, limitMs: number): Promise<'stopped' | 'hung'> {
  return Promise.race([stop.then(() => 'stopped' as const), new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), limitMs).unref())]);
}

const connected = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });

test.serial('a client silent before its TLS handshake, and one with a request open, do not hold the stop past its grace', async (t) => {
  const edge = await startTestEdge();
  // connected to the TLS listener, nothing sent: the server waits for a ClientHello
  const silent = await connected(edge.httpsPort!);
  // a request whose head never ends, on the cleartext listener
  const slow = await connected(edge.httpPort!);
  slow.write('GET / HTTP/1.1\r\nHost: nothing.example\r\n');
  const closed = Promise.all([silent, slow].map((s) => new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())))));
  // the grace is 300 ms; the bound here only tells a bounded stop from one waiting on the handshake timeout (120 s)
  t.is(await stopWithin(edge.stop(300), 20_000), 'stopped');
  await closed;
  t.true(silent.destroyed && slow.destroyed, 'both connections were closed by the edge');
});
