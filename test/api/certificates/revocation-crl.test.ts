import https from 'node:https';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { startMtlsNginx } from '../../helpers/nginx.js';
import { makeSelfSigned, x509Text } from '../../helpers/pki.js';
import { assertRefused } from '../../helpers/refusals.js';
import { crlFile, crlText, fetchBytes, file, issue, run, verifyWithCrl } from '../../helpers/revocation.js';
import { selfSignedCertificate } from '../../helpers/selfSigned.js';
import { useStack, waitFor } from '../../helpers/stack.js';

const stack = useStack(test);

const crlUrl = (hubId: string, query = '') => `${stack.baseUrl}/pki/${hubId}/crl${query}`;
const getCrl = async (hubId: string) => (await fetchBytes(crlUrl(hubId))).body;

test('the CRL: openssl accepts a live certificate and refuses a revoked one; the revocation is in it within 2 s and outlives the row', async (t) => {
  const hub = await stack.hub();
  const live = await issue(hub, 'live');
  const doomed = await issue(hub, 'doomed');
  // issued certificates name where to check them
  const text = await x509Text(live.pem);
  t.regex(text, new RegExp(`X509v3 CRL Distribution Points: \\n\\s+Full Name:\\n\\s+URI:${stack.baseUrl}/pki/${hub.hubId}/crl\\n`));
  t.regex(text, new RegExp(`OCSP - URI:${stack.baseUrl}/pki/${hub.hubId}/ocsp\\n`));
  t.regex(text, new RegExp(`CA Issuers - URI:${stack.baseUrl}/pki/${hub.hubId}/ca\\n`));
  t.regex(await x509Text(readFileSync(live.issuingFile, 'utf8')), new RegExp(`URI:${stack.baseUrl}/pki/root/crl\\n`));

  const first = await fetchBytes(crlUrl(hub.hubId));
  t.is(first.status, 200);
  t.is(first.headers.get('content-type'), 'application/pkix-crl');
  t.regex(first.headers.get('cache-control') ?? '', /^public, max-age=\d+$/);
  t.truthy(first.headers.get('etag'));
  // signed by the hub's issuing CA
  const { stderr } = await run('openssl', ['crl', '-inform', 'DER', '-in', file(first.body, 'crl'), '-CAfile', live.issuingFile, '-noout']);
  t.regex(stderr, /verify OK/);
  const firstText = await crlText(first.body);
  const firstNumber = Number(/X509v3 CRL Number: \n\s+(\d+)/.exec(firstText)?.[1]);
  t.true(firstNumber >= 1);
  t.true((await verifyWithCrl(live, [await crlFile(first.body)])).ok);
  t.true((await verifyWithCrl(doomed, [await crlFile(first.body)])).ok);
  // an unchanged CRL is not sent again
  t.is((await fetchBytes(crlUrl(hub.hubId), { headers: { 'if-none-match': first.headers.get('etag') as string } })).status, 304);

  const deleted = await hub.call('DELETE', `${hub.h}/client-certificates/${doomed.id}?reason=keyCompromise`);
  t.is(deleted.status, 200, deleted.text);
  const serial = doomed.serialNumber.toUpperCase();
  const revoked = await waitFor(
    async () => {
      const crl = await getCrl(hub.hubId);
      return (await crlText(crl)).includes(`Serial Number: ${serial}`) && crl;
    },
    { timeoutMs: 2000, what: 'the revocation in the CRL' },
  );
  const revokedText = await crlText(revoked);
  t.regex(
    revokedText,
    new RegExp(`Serial Number: ${serial}\\n\\s+Revocation Date: .*\\n\\s+CRL entry extensions:\\n\\s+X509v3 CRL Reason Code: \\n\\s+Key Compromise`),
  );
  t.true(Number(/X509v3 CRL Number: \n\s+(\d+)/.exec(revokedText)?.[1]) > firstNumber);
  const refused = await verifyWithCrl(doomed, [await crlFile(revoked)]);
  t.false(refused.ok);
  t.regex(refused.output, /certificate revoked/);
  t.true((await verifyWithCrl(live, [await crlFile(revoked)])).ok);
  // the root's CRL of issuing CAs, signed by the root: with both, the whole chain is checked
  const rootCrl = await fetchBytes(`${stack.baseUrl}/pki/root/crl`);
  t.is(rootCrl.status, 200);
  t.regex((await run('openssl', ['crl', '-inform', 'DER', '-in', file(rootCrl.body, 'crl'), '-CAfile', live.rootFile, '-noout'])).stderr, /verify OK/);
  t.true((await verifyWithCrl(live, [await crlFile(revoked), await crlFile(rootCrl.body)], true)).ok);
  // PEM on request
  const pem = await fetchBytes(crlUrl(hub.hubId, '?format=pem'));
  t.regex(pem.body.toString(), /^-----BEGIN X509 CRL-----\n/);
  // the row is gone, the revocation stays
  t.is((await hub.call('GET', `${hub.h}/client-certificates/${doomed.id}`)).status, 404);
  const again = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'doomed', value: await makeSelfSigned('/CN=other') } });
  t.is(again.status, 201);
  t.true((await crlText(await getCrl(hub.hubId))).includes(`Serial Number: ${serial}`));
});

test('re-issuing over a certificate revokes the one it replaces (superseded); uploaded certificates are never in the CRL', async (t) => {
  const hub = await stack.hub();
  const old = await issue(hub, 'rotating');
  const { stdout: csr } = await run('openssl', ['req', '-new', '-key', old.keyFile, '-subj', '/CN=rotating.example.com']);
  const replaced = await hub.call('PUT', `${hub.h}/client-certificates/${old.id}`, { body: { name: 'rotating', value: csr } });
  t.is(replaced.status, 200, replaced.text);
  t.not(replaced.json.serialNumber, old.serialNumber);
  const text = await waitFor(
    async () => {
      const crl = await crlText(await getCrl(hub.hubId));
      return crl.includes(`Serial Number: ${old.serialNumber.toUpperCase()}`) && crl;
    },
    { what: 'the superseded certificate in the CRL' },
  );
  t.regex(text, /Superseded/);
  t.false(text.includes(replaced.json.serialNumber.toUpperCase()));

  const uploaded = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name: 'uploaded', value: await makeSelfSigned('/CN=up') } });
  const upSerial = (await hub.call('GET', `${hub.h}/client-certificates/${uploaded.json.id}`)).json.serialNumber as string;
  t.is((await hub.call('DELETE', `${hub.h}/client-certificates/${uploaded.json.id}`)).status, 200);
  const { rows } = await stack.sql.query('SELECT serial_number FROM certificate_revocations WHERE hub_id = $1', [hub.hubId]);
  t.deepEqual(
    rows.map((r) => r.serial_number),
    [old.serialNumber],
  );
  t.false((await crlText(await getCrl(hub.hubId))).includes(upSerial.toUpperCase()));
});

test('revocations at once: every serial is in the CRL (requests before the next CRL share a job; a job that missed one signs again)', async (t) => {
  const hub = await stack.hub();
  const certs = await Promise.all(Array.from({ length: 8 }, (_, i) => issue(hub, `burst-${i}`)));
  const deletes = await Promise.all(certs.map((c) => hub.call('DELETE', `${hub.h}/client-certificates/${c.id}?reason=affiliationChanged`)));
  t.deepEqual(
    deletes.map((d) => d.status),
    certs.map(() => 200),
  );
  const text = await waitFor(
    async () => {
      const crl = await crlText(await getCrl(hub.hubId));
      return certs.every((c) => crl.includes(`Serial Number: ${c.serialNumber.toUpperCase()}`)) && crl;
    },
    { what: 'every revocation in the CRL' },
  );
  t.is(text.match(/Affiliation Changed/g)?.length, 8);
  const { rows } = await stack.sql.query("SELECT count(*)::int AS n FROM executions WHERE type = 'pki.publishCrl' AND hub_id = $1", [hub.hubId]);
  t.true(rows[0].n <= 8, `${rows[0].n} CRL jobs for 8 revocations`);
});

test('bad input: an unknown reason is a 400 that deletes nothing; a CRL of a hub without a CA is 404; a bad format is 400', async (t) => {
  const hub = await stack.hub();
  const cert = await issue(hub, 'kept');
  for (const reason of ['compromised', 'KEYCOMPROMISE', '1', '']) {
    const r = await hub.call('DELETE', `${hub.h}/client-certificates/${cert.id}?reason=${reason}`);
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', 'reason');
  }
  t.is((await hub.call('GET', `${hub.h}/client-certificates/${cert.id}`)).status, 200);
  t.is((await stack.sql.query('SELECT 1 FROM certificate_revocations WHERE hub_id = $1', [hub.hubId])).rowCount, 0);
  for (const path of ['/pki/no-such-hub/crl', '/pki/no-such-hub/ca']) {
    const missing = await stack.call('GET', path);
    assertRefused(t, missing, 404, 'not_found', 'EH_NOT_FOUND');
  }
  assertRefused(t, await stack.call('GET', `/pki/${hub.hubId}/crl?format=xml`), 400, 'invalid_request', 'EH_INVALID_REQUEST', 'format');
  // the caIssuers URL serves the issuing CA
  const ca = await fetchBytes(`${stack.baseUrl}/pki/${hub.hubId}/ca?format=pem`);
  t.is(ca.body.toString().trim(), readFileSync(cert.issuingFile, 'utf8').trim());
});

test("a deleted hub's issuing CA is revoked in the root's CRL: its certificates no longer verify with the root's CRL", async (t) => {
  const hub = await stack.hub();
  const cert = await issue(hub, 'orphan');
  const hubCrl = await crlFile(await getCrl(hub.hubId));
  const rootCrl = async () => (await fetchBytes(`${stack.baseUrl}/pki/root/crl`)).body;
  t.true((await verifyWithCrl(cert, [hubCrl, await crlFile(await rootCrl())], true)).ok);
  const issuingSerial = (await run('openssl', ['x509', '-in', cert.issuingFile, '-noout', '-serial'])).stdout.trim().replace('serial=', '');
  t.is((await stack.call('DELETE', `/admin/v1/hubs/${hub.hubId}`, { auth: stack.admin })).status, 204);
  const text = await waitFor(
    async () => {
      const crl = await crlText(await rootCrl());
      return crl.includes(`Serial Number: ${issuingSerial}`) && crl;
    },
    { what: "the issuing CA in the root's CRL" },
  );
  t.regex(text, /Cessation Of Operation/);
  const refused = await verifyWithCrl(cert, [hubCrl, await crlFile(await rootCrl())], true);
  t.false(refused.ok);
  t.regex(refused.output, /certificate revoked/);
  assertRefused(t, await stack.call('GET', `/pki/${hub.hubId}/crl`), 404, 'not_found', 'EH_NOT_FOUND');
});

/** One HTTPS request to nginx with a client certificate: its status and body, or status 0 when the handshake failed. */
function mtlsGet(port: number, cert: { leafFile: string; keyFile: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = https.get(
      { host: '127.0.0.1', port, path: '/', cert: readFileSync(cert.leafFile), key: readFileSync(cert.keyFile), rejectUnauthorized: false, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', () => resolve({ status: 0, body: '' }));
  });
}

/**
 * nginx as a relying party, with ssl_crl pointed at the CRLs downloaded from the service. The certificates' profile
 * has the extended key usage serverAuth only, which OpenSSL's client-purpose check (nginx's) refuses: nginx answers
 * 400 to every one of them (`unsuitable certificate purpose`). What it makes of the CRL is in its error log, where
 * OpenSSL's last verify error is named: `certificate revoked` for the revoked certificate once the CRL was fetched
 * again, never for the live one.
 */
test('nginx with ssl_verify_client on and ssl_crl pointed at the downloaded CRLs finds a revoked certificate revoked once the CRL is fetched again', async (t) => {
  const hub = await stack.hub();
  const live = await issue(hub, 'nginx-live');
  const doomed = await issue(hub, 'nginx-doomed');
  const { certFile: serverCert, keyFile: serverKey } = selfSignedCertificate(
    mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'nginx-crl-')),
    'server',
    '/CN=127.0.0.1',
  );
  const caFile = file(readFileSync(live.issuingFile, 'utf8') + readFileSync(live.rootFile, 'utf8'));
  const crls = file('');
  const download = async () => {
    const hubCrl = (await fetchBytes(crlUrl(hub.hubId, '?format=pem'))).body.toString();
    const rootCrl = (await fetchBytes(`${stack.baseUrl}/pki/root/crl?format=pem`)).body.toString();
    writeFileSync(crls, hubCrl + rootCrl);
    return hubCrl;
  };
  await download();
  const nginx = await startMtlsNginx({ caFile, crlFile: crls, certFile: serverCert, keyFile: serverKey });
  stack.onStop(() => nginx.stop());
  const verdicts = (log: string) => [...log.matchAll(/client SSL certificate verify error: \((\d+):([^)]*)\)/g)].map((m) => m[2]);
  const before = await mtlsGet(nginx.port, live);
  await mtlsGet(nginx.port, doomed);
  t.deepEqual(verdicts(nginx.log()), ['unsuitable certificate purpose', 'unsuitable certificate purpose'], before.body);

  t.is((await hub.call('DELETE', `${hub.h}/client-certificates/${doomed.id}?reason=cessationOfOperation`)).status, 200);
  await waitFor(async () => (await crlText(Buffer.from(await download()))).includes(doomed.serialNumber.toUpperCase()), { what: 'the revocation in the CRL' });
  nginx.reload();
  // the reloaded workers read the new CRL
  await waitFor(async () => (await mtlsGet(nginx.port, doomed)).status === 400 && verdicts(nginx.log()).at(-1) === 'certificate revoked', {
    what: 'nginx finding the certificate revoked',
  });
  const seen = verdicts(nginx.log()).length;
  t.is((await mtlsGet(nginx.port, live)).status, before.status);
  t.deepEqual(verdicts(nginx.log()).slice(seen), ['unsuitable certificate purpose']);
});
