/**
 * The admission pipeline runs the same way for a request and for an upgrade request (edge/pipeline): a login that
 * cannot reach its provider is answered alike, and the bytes of a request the edge refuses are metered to its share
 * for both.
 */
import net from 'node:net';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { type HubFixture, useStack } from '../helpers/stack.js';

const stack = useStack(test);
stack.onStop(async () => {
  await edge?.stop(1000);
  await backend?.close();
});
let edge: Edge;
let backend: Backend;
let hub: HubFixture;

test.before(async () => {
  edge = await startTestEdge();
  backend = await startBackend((_req, res) => res.end('target'));
  hub = await stack.hub({ name: 'pipeline' });
});

/** Sends `request` on a fresh connection and reads everything until the edge closes it: the status line and the byte count. */
function raw(request: string): Promise<{ head: string; received: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(edge.httpPort!, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (d) => chunks.push(d));
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      resolve({ head: all.toString('latin1').split('\r\n')[0], received: all.length });
    });
    socket.on('error', reject);
  });
}

const upgradeRequest = (host: string) =>
  `GET /ws HTTP/1.1\r\nHost: ${host}\r\nAccept: text/html\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;

test('a login that cannot reach its provider is answered 502 for a request and for an upgrade alike', async (t) => {
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: {
      name: 'gone',
      type: 'OIDC',
      config: { clientId: 'x', clientSecret: 'y', issuerUrl: 'http://127.0.0.1:9', scopes: ['openid', 'email'] },
      emailPatterns: ['*@example.com'],
    },
  });
  t.is(provider.status, 201, provider.text);
  const { host } = await routedShare(edge, hub, { target: backend.url, authProviderId: provider.json.id });

  const plain = await raw(`GET / HTTP/1.1\r\nHost: ${host}\r\nAccept: text/html\r\nConnection: close\r\n\r\n`);
  t.is(plain.head, 'HTTP/1.1 502 Bad Gateway');
  const upgrade = await raw(upgradeRequest(host));
  t.is(upgrade.head, 'HTTP/1.1 502 Bad Gateway');
});

test('the bytes of a request and of an upgrade the edge refuses are metered to their share alike', async (t) => {
  const metered = await stack.hub({ name: 'pipeline-meter' });
  // a mutual-TLS share refuses both on the plain listener, before any target is reached
  const plainShare = await routedShare(edge, metered, { name: 'plain', target: backend.url, mutualTls: true });
  const upgradeShare = await routedShare(edge, metered, { name: 'upgrade', target: backend.url, mutualTls: true });

  const request = `GET / HTTP/1.1\r\nHost: ${plainShare.host}\r\nConnection: close\r\n\r\n`;
  const plain = await raw(request);
  t.is(plain.head, 'HTTP/1.1 403 Forbidden');
  const upgradeBytes = upgradeRequest(upgradeShare.host);
  const upgrade = await raw(upgradeBytes);
  t.is(upgrade.head, 'HTTP/1.1 403 Forbidden');

  await edge.meter.flush();
  const totals = async (zId: string) => {
    const metrics = await metered.call('GET', `${metered.h}/shares/${zId}/metrics?range=PT1H`);
    t.is(metrics.status, 200, metrics.text);
    return metrics.json.samples.reduce((s: { rx: number; tx: number }, p: { rx: number; tx: number }) => ({ rx: s.rx + p.rx, tx: s.tx + p.tx }), {
      rx: 0,
      tx: 0,
    });
  };
  t.deepEqual(await totals(plainShare.zId), { rx: Buffer.byteLength(request), tx: plain.received });
  t.deepEqual(await totals(upgradeShare.zId), { rx: Buffer.byteLength(upgradeBytes), tx: upgrade.received });
});
