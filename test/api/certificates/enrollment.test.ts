import test from 'ava';
import { makeCsr, makeSelfSigned, opensslVerify, tamperCsr, x509Text } from '../../helpers/pki.js';
import { useStack, type HubFixture } from '../../helpers/stack.js';
import type { ErrorCode } from '../../../shared/errors.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test);

async function tokenWithJwt(hub: HubFixture, body: Record<string, unknown>) {
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body });
  if (tok.status !== 201) throw new Error(`create token: ${tok.status} ${tok.text}`);
  const jwt = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  if (jwt.status !== 200) throw new Error(`jwt: ${jwt.status} ${jwt.text}`);
  return { token: tok.json, jwt: jwt.json.jwt as string, url: jwt.json.url as string };
}

/** Sleeps until the instant has passed (tokens expire on the server's clock, which is this machine's). */
const untilPast = async (instant: string) => {
  const wait = new Date(instant).getTime() - Date.now() + 50;
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
};

const enroll = (hub: HubFixture, body: unknown, headers: Record<string, string> = {}, prefix = hub.h2) =>
  stack.call('POST', `${prefix}/client-certificates/enroll`, { body, headers });

test('enroll issues a certificate with the documented profile that openssl verifies; the token is spent', async (t) => {
  const hub = await stack.hub();
  const { token, jwt, url } = await tokenWithJwt(hub, { name: 'edge-1', commonName: 'edge-1.example.com', organization: 'Acme', validYears: 2 });
  t.is(url, `${stack.baseUrl}/hub/v2/${hub.hubId}/client-certificates/enroll`);
  const csr = await makeCsr('/CN=edge-1.example.com/O=Acme/OU=Anything');
  const r = await enroll(hub, { jwt, csr });
  t.is(r.status, 201, r.text);
  t.like(r.json, { name: 'edge-1', hubId: hub.hubId });
  const text = await x509Text(r.json.value);
  t.regex(text, /Subject: CN ?= ?edge-1\.example\.com, O ?= ?Acme, OU ?= ?Anything/);
  t.regex(text, /X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign\s*\n/);
  t.notRegex(text, /Non Repudiation|Key Encipherment|Data Encipherment|Key Agreement|Encipher Only|Decipher Only/);
  t.regex(text, /X509v3 Extended Key Usage: *\n\s+TLS Web Server Authentication\s*\n/);
  t.regex(text, /X509v3 Subject Key Identifier/);
  t.regex(text, /X509v3 Authority Key Identifier/);
  const serial = /Serial Number:\s*\n?\s*([0-9a-f:]+)/.exec(text)?.[1]?.replace(/:/g, '') ?? '';
  t.true(serial.length >= 16, `serial has >= 64 bits (${serial})`);
  const years = (new Date(r.json.notAfter).getTime() - Date.now()) / (365.25 * 86400_000);
  t.true(years > 1.99 && years < 2.01, 'validity validYears');
  const verified = await opensslVerify(r.json.value, r.json.chain);
  t.true(verified.ok, verified.output);

  const again = await enroll(hub, { jwt, csr: await makeCsr('/CN=edge-1.example.com/O=Acme') });
  t.is(again.status, 403, 'a JWT is good for one certificate');
  t.is(again.json.error, 'not_found');
  const retried = await enroll(hub, { jwt, csr });
  t.is(retried.status, 200, 'a retry with the same key gets the certificate that was issued');
  t.is(retried.json.id, r.json.id);
  const got = await hub.call('GET', `${hub.h}/client-certificates/${r.json.id}`);
  t.deepEqual(got.json, r.json, 'the answer (the row the worker handed back) is what is stored');
  const executions = await hub.call('GET', `${hub.h}/executions?size=100`);
  const issuance = executions.json.content.filter((e: { result?: { certificateId?: string } }) => e.result?.certificateId === r.json.id);
  t.is(issuance.length, 1, 'one issuance execution, recorded in the same statement as the certificate');
  t.like(issuance[0], { status: 'SUCCEEDED', result: { certificateId: r.json.id } });
  const jwtAgain = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${token.id}/enrollment-jwt`);
  // no JWT for a spent token, no rename of it: refusals that name the state
  assertRefused(t, jwtAgain, 400, 'invalid_request', 'EH_INVALID_STATE', 'spent');
  const rename = await hub.call('PATCH', `${hub.h}/certificate-request-tokens/${token.id}`, { body: { name: 'x' } });
  assertRefused(t, rename, 400, 'invalid_request', 'EH_INVALID_STATE', 'spent');
  // the certificate took the token's name: no new token may take it
  assertRefused(t, await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'edge-1' } }), 409, 'conflict', 'EH_NAME_TAKEN');
});

test('RSA 2048 and EC P-384 CSRs are accepted, also under the /hub prefix', async (t) => {
  const hub = await stack.hub();
  for (const spec of ['rsa2048', 'ec384'] as const) {
    const { jwt } = await tokenWithJwt(hub, { name: `k-${spec}` });
    const r = await enroll(hub, { jwt, csr: await makeCsr(`/CN=${spec}`, spec) }, {}, hub.h);
    t.is(r.status, 201, `${spec}: ${r.text}`);
    t.true((await opensslVerify(r.json.value, r.json.chain)).ok);
  }
});

test('subject mismatches are a 400 naming each; validate-only lists them as violations and spends nothing', async (t) => {
  const hub = await stack.hub();
  const { jwt } = await tokenWithJwt(hub, { name: 'strict', commonName: 'a.example.com', organization: 'Acme', organizationalUnit: 'Ops' });
  const csr = await makeCsr('/CN=b.example.com/O=Acme/OU=Dev');
  const r = await enroll(hub, { jwt, csr });
  // the message names each mismatch
  assertRefused(t, r, 400, 'invalid_request', 'EH_CSR_SUBJECT_MISMATCH', ["CN must be 'a.example.com'", "OU must be 'Ops'"]);
  t.notRegex(r.json.message, /\bO must/);

  const v = await enroll(hub, { jwt, csr }, { 'x-validate': 'true' });
  t.is(v.status, 200);
  t.is(v.json.length, 2);
  for (const violation of v.json) t.like(violation, { path: '$.csr', label: 'subject_mismatch' });

  const good = await makeCsr('/CN=a.example.com/O=Acme/OU=Ops');
  const ok = await enroll(hub, { jwt, csr: good }, { 'x-validate': 'true' });
  t.is(ok.status, 200);
  t.deepEqual(ok.json, []);
  t.deepEqual((await enroll(hub, { jwt, csr: good }, { 'x-validate': 'true' })).json, [], 'validation spends nothing');
  const list = await hub.call('GET', `${hub.h}/client-certificates`);
  t.is(list.json.totalElements, 0);
  t.is((await enroll(hub, { jwt, csr: good })).status, 201);
  const spent = await enroll(hub, { jwt, csr: good }, { 'x-validate': 'true' });
  t.deepEqual(
    spent.json.map((x: { path: string; label: string }) => [x.path, x.label]),
    [['$.jwt', 'spent']],
  );
});

test('bad CSRs are 400 naming why (and $.csr violations in validate-only mode)', async (t) => {
  const hub = await stack.hub();
  const { jwt } = await tokenWithJwt(hub, { name: 'csr-checks' });
  const cases: [string, string, RegExp][] = [
    ['not PEM', 'hello', /PEM/],
    ['garbage base64', '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n', /PKCS#10|not a valid/],
    ['bad signature', tamperCsr(await makeCsr('/CN=x')), /signature/],
    ['RSA 1024', await makeCsr('/CN=x', 'rsa1024'), /RSA 1024.*2048/],
    ['P-521', await makeCsr('/CN=x', 'ec521'), /secp521r1|curve/],
    ['Ed25519', await makeCsr('/CN=x', 'ed25519'), /ed25519/i],
  ];
  for (const [what, csr, message] of cases) {
    const r = await enroll(hub, { jwt, csr });
    assertRefused(t, r, 400, 'invalid_request', 'EH_CSR_INVALID');
    t.regex(r.json.message, message, `${what}: the message says why (the point of this test)`);
    const v = await enroll(hub, { jwt, csr }, { 'x-validate': 'true' });
    t.is(v.json.length, 1, what);
    t.like(v.json[0], { path: '$.csr' });
    t.regex(v.json[0].message, message, what);
  }
  const missing = await enroll(hub, { jwt });
  assertRefused(t, missing, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.csr');
  t.is((await hub.call('GET', `${hub.h}/client-certificates`)).json.totalElements, 0, 'nothing written');
});

test('an expired, revoked, foreign-hub or forged JWT is 403 (and a $.jwt violation)', async (t) => {
  const hub = await stack.hub();
  const other = await stack.hub();
  const expired = await tokenWithJwt(hub, { name: 'short', ttl: 'PT3S' });
  const csr = await makeCsr('/CN=x');
  const revoked = await tokenWithJwt(hub, { name: 'revoked' });
  t.is((await hub.call('DELETE', `${hub.h}/certificate-request-tokens/${revoked.token.id}`)).status, 200);
  const foreign = await tokenWithJwt(other, { name: 'foreign' });
  const valid = await tokenWithJwt(hub, { name: 'valid' });
  const [h, p, s] = valid.jwt.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  const forged = [h, Buffer.from(JSON.stringify({ ...claims, sub: revoked.token.token })).toString('base64url'), s].join('.');
  await untilPast(expired.token.expiresAt);
  const cases: [string, string, string, ErrorCode][] = [
    ['expired', expired.jwt, 'expired', 'EH_JWT_EXPIRED'],
    ['revoked', revoked.jwt, 'revoked', 'EH_JWT_REVOKED'],
    ['other hub', foreign.jwt, 'wrong_hub', 'EH_JWT_WRONG_HUB'],
    ['forged', forged, 'invalid_signature', 'EH_JWT_INVALID'],
    ['garbage', 'not.a.jwt', 'malformed', 'EH_JWT_INVALID'],
  ];
  for (const [what, jwt, label, code] of cases) {
    const r = await enroll(hub, { jwt, csr });
    assertRefused(t, r, 403, 'not_found', code);
    const v = await enroll(hub, { jwt, csr }, { 'x-validate': 'true' });
    t.is(v.status, 200);
    t.deepEqual(
      v.json.map((x: { path: string; label: string }) => [x.path, x.label]),
      [['$.jwt', label]],
      what,
    );
    t.is(typeof v.json[0].message, 'string');
  }
  // the foreign JWT still works on its own hub
  t.is((await enroll(other, { jwt: foreign.jwt, csr })).status, 201);
  t.is((await enroll(hub, { jwt: valid.jwt, csr })).status, 201);
});

test('20 concurrent enrolls with one JWT (and 20 keys) give exactly one certificate', async (t) => {
  const hub = await stack.hub();
  const { jwt } = await tokenWithJwt(hub, { name: 'race' });
  const csrs = await Promise.all(Array.from({ length: 20 }, () => makeCsr('/CN=race')));
  const results = await Promise.all(csrs.map((csr) => enroll(hub, { jwt, csr })));
  const statuses = results.map((r) => r.status).sort();
  t.deepEqual(statuses, [201, ...Array(19).fill(403)], JSON.stringify(results.filter((r) => r.status >= 500).map((r) => r.text)));
  const list = await hub.call('GET', `${hub.h}/client-certificates`);
  t.is(list.json.totalElements, 1);
  t.is(list.json.content[0].name, 'race');
});

test('token in path: CSR issues without subject constraint; CERTIFICATE stores the upload under name; one-time', async (t) => {
  const hub = await stack.hub();
  const tokenPath = (prefix: string, token: string) => `${prefix}/client-certificates/token/${token}`;
  const a = await tokenWithJwt(hub, { name: 'legacy-csr', commonName: 'must.not.matter' });
  const r = await stack.call('POST', tokenPath(hub.h2, a.token.token), { body: { type: 'CSR', value: await makeCsr('/CN=other') } });
  t.is(r.status, 201, r.text);
  t.like(r.json, { name: 'legacy-csr', hubId: hub.hubId });
  t.true((await opensslVerify(r.json.value, r.json.chain)).ok);
  const replay = await stack.call('POST', tokenPath(hub.h2, a.token.token), { body: { type: 'CSR', value: await makeCsr('/CN=other') } });
  assertRefused(t, replay, 403, 'not_found', 'EH_TOKEN_UNUSABLE');
  assertRefused(t, await enroll(hub, { jwt: a.jwt, csr: await makeCsr('/CN=must.not.matter') }), 403, 'not_found', 'EH_JWT_SPENT'); // the JWT of a spent token is dead

  const b = await tokenWithJwt(hub, { name: 'legacy-cert' });
  const upload = await makeSelfSigned('/CN=uploaded');
  const c = await stack.call('POST', tokenPath(hub.h, b.token.token), { body: { type: 'CERTIFICATE', value: upload, name: 'my-upload' } });
  t.is(c.status, 201, c.text);
  t.like(c.json, { name: 'my-upload' });
  t.is(c.json.value.trim(), upload.trim());
  t.is((await stack.call('POST', tokenPath(hub.h, b.token.token), { body: { type: 'CERTIFICATE', value: upload, name: 'again' } })).status, 403);
  t.is((await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'legacy-cert' } })).status, 201, "the token's own name was freed");

  t.is((await stack.call('POST', tokenPath(hub.h, 'unknown-token'), { body: { type: 'CSR', value: await makeCsr('/CN=x') } })).status, 403);
  const d = await tokenWithJwt(hub, { name: 'garbage' });
  const garbage = await stack.call('POST', tokenPath(hub.h, d.token.token), {
    body: { type: 'CERTIFICATE', value: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' },
  });
  t.is(garbage.status, 400);
  const taken = await stack.call('POST', tokenPath(hub.h, d.token.token), { body: { type: 'CERTIFICATE', value: upload, name: 'my-upload' } });
  assertRefused(t, taken, 409, 'conflict', 'EH_NAME_TAKEN'); // a name collision with a certificate
  const badType = await stack.call('POST', tokenPath(hub.h, d.token.token), { body: { type: 'PFX', value: upload } });
  t.is(badType.status, 400);
  t.is((await stack.call('POST', tokenPath(hub.h, d.token.token), { body: { type: 'CERTIFICATE', value: upload } })).status, 201, 'refusals did not spend it');

  const e = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'short', ttl: 'PT1S' } });
  await untilPast(e.json.expiresAt);
  const expired = await stack.call('POST', tokenPath(hub.h2, e.json.token), { body: { type: 'CSR', value: await makeCsr('/CN=x') } });
  assertRefused(t, expired, 401, 'unauthorized', 'EH_TOKEN_EXPIRED');
  const other = await stack.hub();
  const f = await tokenWithJwt(hub, { name: 'wrong-hub' });
  assertRefused(
    t,
    await stack.call('POST', tokenPath(other.h2, f.token.token), { body: { type: 'CSR', value: await makeCsr('/CN=x') } }),
    403,
    'not_found',
    'EH_TOKEN_UNUSABLE',
  );
});
