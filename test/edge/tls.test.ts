import { mkdtempSync, renameSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import test from 'ava';
import pg from 'pg';
import { customFrontendRenewal } from '../../workers/schedules/customFrontends.js';
import { publishDnsRecords, startDnsServer, type TestDnsServer } from '../helpers/dnsServer.js';
import { edgeRequest, routedShare, startTestEdge, useBackend, useTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';
import { assertRefused } from '../helpers/refusals.js';
import { selfSignedCertificate } from '../helpers/selfSigned.js';

let dns: TestDnsServer;
let hub: HubFixture;
let frontendCa: string;

async function query<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The certificate the edge presents for `servername` (and whether it verified against `ca`). */
function peerCertificate(port: number, servername: string, ca?: string): Promise<{ certificate: tls.PeerCertificate; authorized: boolean; error?: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: false }, () => {
      resolve({ certificate: socket.getPeerCertificate(), authorized: socket.authorized, error: socket.authorizationError?.toString() });
      socket.end();
    });
    socket.on('error', reject);
  });
}

test.before(async () => {
  dns = await startDnsServer();
});
const stack = useStack(test, () => ({ env: { HUB_DNS_SERVERS: dns.server, HUB_DNS_CHECK_INTERVAL_MS: '50', HUB_CERTIFICATE_RENEW_BEFORE_DAYS: '120' } }));
const backend = useBackend(test, stack, (req, res) => res.end(`${req.headers['x-forwarded-proto']} ${req.url}`));
const edge = useTestEdge(test, stack);
test.before(async () => {
  hub = await stack.hub();
  // the worker's first start issues the standard frontends' certificates from the frontend CA
  frontendCa = await waitFor(
    async () => (await query<{ certificate_pem: string }>(`SELECT certificate_pem FROM frontend_issuers WHERE name = 'local'`))[0]?.certificate_pem,
    { what: 'the frontend CA' },
  );
  await waitFor(async () => (await query(`SELECT 1 FROM edge_certificates WHERE domain = 'share.localhost'`)).length > 0, {
    what: 'the public frontend certificate',
  });
});
test.after.always(async () => {
  await dns?.close();
});

test('a standard frontend is served over TLS with its wildcard certificate from the service CA, verified by the client', async (t) => {
  const { host } = await routedShare(edge, hub, { target: backend.url });
  await edge.settled();
  const r = await edgeRequest(edge.httpsPort!, host, { path: '/x?y=1', tls: { ca: frontendCa } });
  t.is(r.status, 200);
  t.is(r.text, 'https /x?y=1');
  const peer = await peerCertificate(edge.httpsPort!, host, frontendCa);
  t.true(peer.authorized, peer.error);
  t.is(peer.certificate.subject.CN, 'share.localhost');
  t.regex(peer.certificate.subjectaltname ?? '', /DNS:\*\.share\.localhost/);
});

test('a custom frontend: ACTIVE, its own certificate served by SNI for its share hosts, then a renewal served without a restart', async (t) => {
  const created = await hub.call('POST', `${hub.h}/custom-frontends`, { body: { hostname: 'tls.example.com' } });
  t.is(created.status, 201);
  await publishDnsRecords(dns, hub, created.json.id);
  const active = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/custom-frontends/${created.json.id}`);
      return r.json.status === 'ACTIVE' && r.json;
    },
    { what: 'custom frontend ACTIVE' },
  );
  const { host } = await routedShare(edge, hub, { target: backend.url, frontendIds: [active.frontendId] });
  t.regex(host, /^[a-z0-9]{12}\.tls\.example\.com$/);
  await edge.settled();

  const r = await edgeRequest(edge.httpsPort!, host, { tls: { ca: frontendCa } });
  t.is(r.status, 200, r.text);
  t.is(r.text, 'https /');
  const before = await peerCertificate(edge.httpsPort!, host, frontendCa);
  t.true(before.authorized, before.error);
  t.is(before.certificate.subject.CN, 'tls.example.com');
  // the hostname itself is covered too, and a client trusting nothing else refuses it (a real verification)
  t.true((await peerCertificate(edge.httpsPort!, 'tls.example.com', frontendCa)).authorized);
  await t.throwsAsync(edgeRequest(edge.httpsPort!, host, { tls: {} }), { message: /self.signed|unable to (get|verify)/i });

  // renewal: the clock enqueues it (certificates are due within the 120-day window), the edge serves the new one
  await customFrontendRenewal.run();
  const renewed = await waitFor(
    async () => {
      const peer = await peerCertificate(edge.httpsPort!, host, frontendCa);
      return peer.certificate.serialNumber !== before.certificate.serialNumber && peer;
    },
    { what: 'the renewed certificate served' },
  );
  t.true(renewed.authorized);
  t.is((await edgeRequest(edge.httpsPort!, host, { tls: { ca: frontendCa } })).status, 200);
});

test('operator certificate files serve the standard frontends and a replaced file is served without a restart', async (t) => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'edge-files-'));
  const certFile = path.join(dir, 'edge.crt');
  const keyFile = path.join(dir, 'edge.key');
  const make = (cn: string) => {
    selfSignedCertificate(dir, 'new', `/CN=${cn}`, 'DNS:*.share.localhost');
    // the key first: a certificate whose key is not yet there is refused and retried on the next change
    renameSync(path.join(dir, 'new.key'), keyFile);
    renameSync(path.join(dir, 'new.crt'), certFile);
  };
  make('operator one');
  const withFiles = await startTestEdge({ tlsFiles: { certFile, keyFile } });
  try {
    const { host } = await routedShare(withFiles, hub, { target: backend.url });
    t.is((await peerCertificate(withFiles.httpsPort!, host)).certificate.subject.CN, 'operator one');
    t.is((await edgeRequest(withFiles.httpsPort!, host, { tls: { rejectUnauthorized: false } })).status, 200);
    make('operator two');
    await waitFor(async () => (await peerCertificate(withFiles.httpsPort!, host)).certificate.subject.CN === 'operator two', {
      what: 'the replaced operator certificate',
    });
    t.pass();
  } finally {
    await withFiles.stop(1000);
  }
});

test('a mutualTls share answers 403 over plain HTTP and to TLS clients without a certificate', async (t) => {
  const created = await hub.call('POST', `${hub.h}/shares`, {
    body: { name: 'm', frontendIds: [(await hub.call('GET', `${hub.h}/frontends`)).json[0].id], target: backend.url, mutualTls: true },
  });
  t.is(created.status, 201, created.text);
  t.is(created.json.mutualTls, true);
  const { host } = await routedShare(edge, hub, { target: backend.url, mutualTls: true });
  const plain = await edgeRequest(edge.httpPort!, host);
  assertRefused(t, plain, 403, 'forbidden', 'EH_MTLS_REQUIRED');
  const anonymous = await edgeRequest(edge.httpsPort!, host, { tls: { ca: frontendCa } });
  assertRefused(t, anonymous, 403, 'forbidden', 'EH_MTLS_NO_CERT');
});
