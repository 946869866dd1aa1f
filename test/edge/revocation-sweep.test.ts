/**
 * Revocation's sweep (every second, and at once after an access change) asks each open connection's rule again. For a
 * mutual-TLS share the rule is the connection's client certificate: it must be read from the connection, which stays,
 * and not from the request: once undici has read a request's body to send it on, the request's `socket` is gone. Read
 * from the request, the connection of an upload with a valid certificate was cut as "no client certificate" by the
 * first sweep before its answer (the client saw "socket hang up").
 */
import https from 'node:https';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { publicFrontendCertificate, routedShare, startBackend, startTestEdge, type Backend } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { keyAndCsr } from '../helpers/tlsClient.js';

const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000' } });
let edge: Edge;
let backend: Backend;
let hub: HubFixture;
stack.onStop(async () => {
  await edge?.stop(1000);
  await backend?.close();
});
test.before(async () => {
  edge = await startTestEdge();
  backend = await startBackend((req, res) => {
    if (req.url !== '/slow') return void res.end(`served ${req.url}`);
    // the body read at once, the answer after 1.5 s: a sweep (every second) comes in between
    let bytes = 0;
    req.on('data', (d: Buffer) => (bytes += d.length));
    req.on('end', () => setTimeout(() => res.end(`read ${bytes} bytes, answered after the sweeps`), 1500));
  });
  hub = await stack.hub({ name: 'sweep' });
  await publicFrontendCertificate(stack.databaseUrl);
});

/** A GET on `agent`'s connection: the status, the body, and whether the request went on a connection used before. */
function get(agent: https.Agent, host: string, path: string): Promise<{ status: number; text: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: edge.httpsPort, path, servername: host, headers: { host }, agent }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, reused: req.reusedSocket }));
    });
    req.once('error', reject);
    req.end();
  });
}

test('a keep-alive connection with a valid client certificate stays open through the sweeps between its requests', async (t) => {
  const { host } = await routedShare(edge, hub, { name: 'mtls', target: backend.url, mutualTls: true });
  const { keyPem, csrPem } = await keyAndCsr('/CN=sweep-client');
  const made = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'sweep-client', value: csrPem } });
  t.is(made.status, 201, made.text);
  const cert = (await hub.call('GET', `${hub.h}/client-certificates/${made.json.id}`)).json.value as string;
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, cert, key: keyPem, rejectUnauthorized: false });
  t.teardown(() => agent.destroy());
  await waitFor(async () => (await get(agent, host, '/first').catch(() => ({ status: 0 }))).status === 200, { what: 'the certificate admitted' });
  let closed = 0;
  for (const sockets of Object.values(agent.sockets)) for (const s of sockets ?? []) s.once('close', () => closed++);
  for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.once('close', () => closed++);

  for (let i = 0; i < 3; i++) {
    // a sweep runs every second: each pause lets at least one come while the connection waits for its next request
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const r = await get(agent, host, `/next-${i}`);
    t.is(r.status, 200);
    t.is(r.text, `served /next-${i}`);
    t.true(r.reused, `request ${i + 2} went on the same connection`);
  }
  t.is(closed, 0, 'the connection was never closed');
});

test("an upload whose answer comes after a sweep is answered (undici lets go of the request's socket once it has read the body)", async (t) => {
  const { host } = await routedShare(edge, hub, { name: 'mtls-slow', target: backend.url, mutualTls: true });
  const { keyPem, csrPem } = await keyAndCsr('/CN=uploader');
  const made = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'uploader', value: csrPem } });
  const cert = (await hub.call('GET', `${hub.h}/client-certificates/${made.json.id}`)).json.value as string;
  const tls = { cert, key: keyPem, rejectUnauthorized: false, servername: host };
  await waitFor(async () => (await get(new https.Agent(tls), host, '/ready').catch(() => ({ status: 0 }))).status === 200, {
    what: 'the certificate admitted',
  });
  const upload = Buffer.alloc(64 << 10, 120);
  const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: edge.httpsPort,
        method: 'POST',
        path: '/slow',
        headers: { host, 'content-length': String(upload.length) },
        agent: false,
        ...tls,
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.once('error', reject);
    req.end(upload);
  });
  t.deepEqual(answer, { status: 200, text: `read ${upload.length} bytes, answered after the sweeps` });
});
