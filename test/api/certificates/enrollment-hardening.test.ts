/**
 * Unauthenticated enrollment work is bounded (no CSR work for a request without a valid JWT, large or odd RSA keys
 * refused before any signature check, a statement timeout on the pool), and a slow enrollment does not burn its
 * token: a retry with the same JWT and key gets the certificate the first request's job issued.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { QueryTypes } from 'sequelize';
import { db } from '../../../shared/db.js';
import { csrStats } from '../../../shared/pki/csr.js';
import { makeCsr } from '../../helpers/pki.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const run = promisify(execFile);
// workers start only where a test says so: the slow-issuance test needs them away at first
const stack = useStack(test, { workers: false, env: { HUB_ISSUANCE_WAIT_MS: '400', HUB_DB_STATEMENT_TIMEOUT_MS: '1500' } });
let hub: HubFixture;
test.before(async () => {
  hub = await stack.hub();
});

let n = 0;
async function tokenWithJwt(body: Record<string, unknown> = {}) {
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: `e-${++n}`, ...body } });
  if (tok.status !== 201) throw new Error(`${tok.status} ${tok.text}`);
  const r = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  return { token: tok.json, jwt: r.json.jwt as string };
}
const enroll = (body: unknown, headers: Record<string, string> = {}) => stack.call('POST', `${hub.h2}/client-certificates/enroll`, { body, headers });

/** A CSR made by openssl with the given RSA key options. */
async function rsaCsr(bits: number, exponent?: number): Promise<string> {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'rsa-'));
  const key = path.join(dir, 'k.pem');
  const opts = ['-pkeyopt', `rsa_keygen_bits:${bits}`, ...(exponent ? ['-pkeyopt', `rsa_keygen_pubexp:${exponent}`] : [])];
  await run('openssl', ['genpkey', '-algorithm', 'RSA', ...opts, '-out', key]);
  return (await run('openssl', ['req', '-new', '-key', key, '-subj', '/CN=rsa'])).stdout;
}

test.serial('a real enroll without a valid JWT is 403 before any CSR work', async (t) => {
  const csr = await makeCsr('/CN=a');
  const { jwt } = await tokenWithJwt();
  const before = csrStats.signatureChecks;
  for (const [bad, code] of [
    ['not-a-jwt', 'EH_JWT_INVALID'],
    [jwt.slice(0, -4) + 'AAAA', 'EH_JWT_INVALID'],
    [jwt.replace(/^[^.]+/, Buffer.from('{"alg":"ES256","kid":"nope"}').toString('base64url')), 'EH_JWT_UNKNOWN_KEY'],
  ] as const) {
    assertRefused(t, await enroll({ jwt: bad, csr }), 403, 'not_found', code);
  }
  t.is(csrStats.signatureChecks, before, 'no CSR signature was checked');
  // the validate-only form still reports every problem, the CSR's included
  const v = await enroll({ jwt: 'not-a-jwt', csr: 'garbage' }, { 'x-validate': 'true' });
  t.deepEqual(v.json.map((x: { path: string }) => x.path).sort(), ['$.csr', '$.jwt']);
});

test.serial('RSA keys over 4096 bits or with an exponent other than 65537 are refused before the signature check', async (t) => {
  const [big, exp3] = await Promise.all([rsaCsr(4104), rsaCsr(2048, 3)]);
  for (const [csr, message] of [
    [big, /RSA 4104 bits; at most 4096/],
    [exp3, /exponent 3; only 65537/],
  ] as const) {
    const { jwt } = await tokenWithJwt({ commonName: 'rsa' });
    const before = csrStats.signatureChecks;
    const r = await enroll({ jwt, csr });
    assertRefused(t, r, 400, 'invalid_request', 'EH_CSR_INVALID');
    t.regex(r.json.message, message, 'names the bound the key is over (the point of this test)');
    t.is(csrStats.signatureChecks, before, 'refused before the signature check');
  }
});

test.serial('no statement holds a pooled connection longer than HUB_DB_STATEMENT_TIMEOUT_MS', async (t) => {
  const [row] = await db().query<{ statement_timeout: string }>('SHOW statement_timeout', { type: QueryTypes.SELECT });
  t.is(row.statement_timeout, '1500ms');
  await t.throwsAsync(db().query('SELECT pg_sleep(5)'), { message: /statement timeout/ });
});

test.serial('a slow enrollment does not burn the token: the retry with the same key gets the issued certificate', async (t) => {
  const { jwt } = await tokenWithJwt({ commonName: 'slow' });
  const csr = await makeCsr('/CN=slow');
  // no worker: the request stops waiting and answers 503; its job stays queued
  const first = await enroll({ jwt, csr });
  assertRefused(t, first, 503, 'unavailable', 'EH_ISSUANCE_PENDING');
  await stack.startWorkers();
  const issued = await waitFor(
    async () => {
      const list = await hub.call('GET', `${hub.h2}/client-certificates`);
      return (list.json?.content ?? []).find((c: { name: string }) => c.name === `e-${n}`);
    },
    { what: 'the queued issuance to finish' },
  );
  const retry = await enroll({ jwt, csr });
  t.is(retry.status, 200, retry.text);
  t.is(retry.json.id, issued.id, 'the certificate that was issued');
  t.regex(retry.json.value, /BEGIN CERTIFICATE/);
  const other = await enroll({ jwt, csr: await makeCsr('/CN=slow') });
  assertRefused(t, other, 403, 'not_found', 'EH_JWT_SPENT'); // a different key is still refused
  const list = await hub.call('GET', `${hub.h2}/client-certificates`);
  t.is(list.json.content.filter((c: { name: string }) => c.name === `e-${n}`).length, 1, 'one certificate');
});
