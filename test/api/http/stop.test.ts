/**
 * A stopping API process: it stops accepting, answers what is in flight, and does not wait on connections with
 * nothing in flight: kept-alive idle ones, and ones that never sent a byte (a browser's preconnect), which node:http
 * would otherwise keep until its headers timeout.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { startServer, stopServer } from '../../../api/server.js';
import { useStack } from '../../helpers/stack.js';

useStack(test, { workers: false });

/** Resolves with `what` when `promise` settles, or with 'still waiting' after `ms` (the test fails on that). */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise.then(() => 'settled'), new Promise<string>((r) => setTimeout(() => r('still waiting'), ms).unref())]);

test('a connection that never sent a byte and a kept-alive idle one do not hold the stop', async (t) => {
  const server = await startServer(0);
  // the headers timeout a silent connection would otherwise be kept for: far longer than the test waits
  server.headersTimeout = 600_000;
  server.requestTimeout = 600_000;
  const { port } = server.address() as AddressInfo;

  const silent = net.connect(port, '127.0.0.1');
  await new Promise((r) => silent.once('connect', r));
  const silentClosed = new Promise((r) => silent.once('close', r));
  silent.on('error', () => undefined);

  const agent = new http.Agent({ keepAlive: true });
  const get = (path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) =>
      http
        .get({ host: '127.0.0.1', port, path, agent }, (res) => {
          let body = '';
          res.on('data', (d) => (body += d)).once('end', () => resolve({ status: res.statusCode!, body }));
        })
        .on('error', reject),
    );
  const idle = await get('/healthz');
  t.is(idle.status, 200);

  const stopped = stopServer(server);
  t.is(await within(silentClosed, 10_000), 'settled', 'the silent connection is closed by the stop');
  t.is(await within(stopped, 10_000), 'settled', 'the stop does not wait for the headers timeout');
  t.false(server.listening);
  agent.destroy();
});
