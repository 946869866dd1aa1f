/**
 * A mutual-TLS share is published at its https:// address, the CA of the edge's certificates is served at
 * GET /hub/v2/public/frontend-ca.pem, and `edgehub enroll` writes it beside the certificate: curl reaches the share
 * with --cacert and the enrolled certificate, without -k.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { publicFrontendCertificate, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack } from '../helpers/stack.js';

const run = promisify(execFile);
const stack = useStack(test);
const backend = useBackend(test, stack, (req, res) => res.end(`hello ${req.headers['x-client-certificate-name'] ?? 'nobody'}`));
const edge = useTestEdge(test, stack);
let hub: HubFixture;

test.before(async () => {
  hub = await stack.hub();
  await publicFrontendCertificate(stack.databaseUrl);
});

test('the frontend CA is served without authentication as PEM', async (t) => {
  const r = await stack.call('GET', '/hub/v2/public/frontend-ca.pem', { contract: false });
  t.is(r.status, 200);
  t.regex(r.headers.get('content-type') ?? '', /application\/x-pem-file/);
  t.regex(r.text, /^-----BEGIN CERTIFICATE-----/);
  const file = path.join(mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'ca-')), 'ca.pem');
  writeFileSync(file, r.text);
  const { stdout } = await run('openssl', ['x509', '-in', file, '-noout', '-ext', 'basicConstraints']);
  t.regex(stdout, /CA:TRUE/);
});

test('a mutual-TLS share answers at its https:// address; curl with the enrolled certificate and the CA edgehub enroll wrote, no -k', async (t) => {
  const plain = await routedShare(edge, hub, { name: 'plain', target: backend.url });
  t.regex(plain.json.frontendEndpoint, /^http:\/\/[a-z0-9]+\.share\.localhost:8000$/, 'a share without mutual TLS keeps its http:// address');
  const { host, json } = await routedShare(edge, hub, { name: 'private', target: backend.url, mutualTls: true });
  t.regex(json.frontendEndpoint, /^https:\/\/[a-z0-9]+\.share\.localhost:8443$/);

  // a recipient enrolls with the command line: certificate, key, and the frontend CA
  const token = await hub.call('POST', `${hub.h2}/certificate-request-tokens`, { body: { name: 'laptop' } });
  const jwt = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${token.json.id}/enrollment-jwt`);
  const out = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'enroll-'));
  const enrolled = await run(process.execPath, ['agent/bin/edgehub.js', 'enroll', jwt.json.jwt, '--out', out]);
  t.regex(enrolled.stdout, /frontend-ca\.pem/);
  t.regex(readFileSync(path.join(out, 'frontend-ca.pem'), 'utf8'), /BEGIN CERTIFICATE/);

  // the test's edge listens on its own port; the name and the CA are the real ones
  const url = `https://${host}:${edge.httpsPort}/`;
  const curl = (extra: string[]) =>
    run('curl', [
      '-sS',
      '--cacert',
      path.join(out, 'frontend-ca.pem'),
      '--resolve',
      `${host}:${edge.httpsPort}:127.0.0.1`,
      '-o',
      '-',
      '-w',
      '\n%{http_code}',
      ...extra,
      url,
    ]).then(
      (r) => r.stdout,
      (e: { stdout?: string; stderr?: string }) => `curl failed (${e.stdout ?? ''}): ${e.stderr ?? ''}`,
    );
  t.regex(await curl(['--cert', path.join(out, 'laptop.crt'), '--key', path.join(out, 'laptop.key')]), /hello laptop\n200$/);
  t.regex(await curl([]), /\n403$/, 'no client certificate: 403');
});
