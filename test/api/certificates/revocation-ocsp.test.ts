import test from 'ava';
import { fetchBytes, file, issue, run, type IssuedCert } from '../../helpers/revocation.js';
import { useStack, waitFor } from '../../helpers/stack.js';

const stack = useStack(test);

const ocspUrl = (hubId: string) => `${stack.baseUrl}/pki/${hubId}/ocsp`;

/** `openssl ocsp` against the hub's responder: its output (stdout and stderr together) and whether it succeeded. */
async function ocsp(hubId: string, issuer: IssuedCert, target: string[], extra: string[] = []): Promise<string> {
  const args = ['ocsp', '-issuer', issuer.issuingFile, ...target, '-url', ocspUrl(hubId), '-CAfile', issuer.rootFile, '-resp_text', ...extra];
  try {
    const { stdout, stderr } = await run('openssl', args);
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}

/** A DER OCSPRequest for `cert`, made by openssl. */
async function requestDer(cert: IssuedCert, nonce = false): Promise<Buffer> {
  const out = file('', 'der');
  await run('openssl', ['ocsp', '-issuer', cert.issuingFile, '-cert', cert.leafFile, nonce ? '-nonce' : '-no_nonce', '-reqout', out]);
  const { readFileSync } = await import('node:fs');
  return readFileSync(out);
}

const post = (hubId: string, body: Buffer) =>
  fetchBytes(ocspUrl(hubId), { method: 'POST', headers: { 'content-type': 'application/ocsp-request' }, body: new Uint8Array(body) });

const MALFORMED = Buffer.from('30030a0101', 'hex');
const UNAUTHORIZED = Buffer.from('30030a0106', 'hex');

test('openssl ocsp reads good, then revoked with its reason within 2 s of the delete, and unknown; the delegated responder signature verifies; the nonce is echoed', async (t) => {
  const hub = await stack.hub();
  const cert = await issue(hub, 'ocsp-live');
  const doomed = await issue(hub, 'ocsp-doomed');
  const good = await ocsp(hub.hubId, cert, ['-cert', cert.leafFile]);
  t.regex(good, /Response verify OK/);
  t.regex(good, new RegExp(`${cert.leafFile}: good\\n`));
  t.regex(good, /OCSP Nonce: /);
  t.notRegex(good, /WARNING/);
  // the responder is delegated: its certificate, issued by the hub's CA, says OCSP signing and no-check
  t.regex(good, /Responder Id: [0-9A-F]{40}\n/);
  t.regex(good, /OCSP Signing/);
  t.regex(good, /OCSP No Check/);
  t.regex(good, /Issuer: O ?= ?edgehub, OU ?= ?hub .*, CN ?= ?edgehub Issuing CA/);
  t.regex(await ocsp(hub.hubId, doomed, ['-cert', doomed.leafFile], ['-no_nonce']), /: good\n/);

  t.is((await hub.call('DELETE', `${hub.h}/client-certificates/${doomed.id}?reason=keyCompromise`)).status, 200);
  // the cached good answer (asked for above without a nonce) is gone: the revocation is in the answer within 2 s
  const revoked = await waitFor(
    async () => {
      const out = await ocsp(hub.hubId, doomed, ['-cert', doomed.leafFile], ['-no_nonce']);
      return /: revoked\n/.test(out) && out;
    },
    { timeoutMs: 2000, what: 'revoked in the OCSP answer' },
  );
  t.regex(revoked, /Response verify OK/);
  t.regex(revoked, /Reason: keyCompromise\n\s+Revocation Time: /);
  t.regex(await ocsp(hub.hubId, doomed, ['-cert', doomed.leafFile]), /: revoked\n/);
  t.regex(await ocsp(hub.hubId, cert, ['-cert', cert.leafFile], ['-no_nonce']), /: good\n/);

  const unknown = await ocsp(hub.hubId, cert, ['-serial', '0x4abcdef0123456789']);
  t.regex(unknown, /Response verify OK/);
  t.regex(unknown, /0x4abcdef0123456789: unknown\n/);
  // several certificates in one request
  const both = await ocsp(hub.hubId, cert, ['-cert', cert.leafFile, '-cert', doomed.leafFile]);
  t.regex(both, new RegExp(`${cert.leafFile}: good\\n[\\s\\S]*${doomed.leafFile}: revoked\\n`));
});

test('answers without a nonce are signed once and served from the cache; with a nonce each is signed for itself; GET takes base64url and base64', async (t) => {
  const hub = await stack.hub();
  const cert = await issue(hub, 'cached');
  const request = await requestDer(cert);
  // the hub's first answer (its responder made just now, whose notification drops what was read meanwhile)
  t.is((await post(hub.hubId, request)).status, 200);
  const answers = await Promise.all(Array.from({ length: 20 }, () => post(hub.hubId, request)));
  for (const a of answers) {
    t.is(a.status, 200);
    t.is(a.headers.get('content-type'), 'application/ocsp-response');
  }
  // ECDSA signatures are randomised: identical bytes are one signature
  t.is(new Set(answers.map((a) => a.body.toString('hex'))).size, 1);
  const cached = (await post(hub.hubId, request)).body;
  t.is(cached.toString('hex'), answers[0].body.toString('hex'));
  const withNonce = await requestDer(cert, true);
  t.not((await post(hub.hubId, withNonce)).body.toString('hex'), (await post(hub.hubId, withNonce)).body.toString('hex'));
  // GET: base64url, and base64 with its `/` and `+` URL-encoded
  const byUrl = await fetchBytes(`${ocspUrl(hub.hubId)}/${request.toString('base64url')}`);
  t.is(byUrl.body.toString('hex'), cached.toString('hex'));
  const byBase64 = await fetchBytes(`${ocspUrl(hub.hubId)}/${encodeURIComponent(request.toString('base64'))}`);
  t.is(byBase64.body.toString('hex'), cached.toString('hex'));
});

test('bad input: garbage, truncated, oversized and empty requests answer malformedRequest; another hub or no hub unauthorized; never a 500', async (t) => {
  const hub = await stack.hub();
  const other = await stack.hub();
  const cert = await issue(hub, 'mine');
  const foreign = await issue(other, 'theirs');
  const request = await requestDer(cert, true);
  const cases: [string, Buffer][] = [
    ['garbage', Buffer.from('hello, responder')],
    ['truncated', request.subarray(0, request.length - 3)],
    ['trailing bytes', Buffer.concat([request, Buffer.of(0)])],
    ['a lone SEQUENCE', Buffer.from('3000', 'hex')],
    ['a certificate instead of a request', Buffer.from(cert.pem.replace(/-----[^-]+-----|\s/g, ''), 'base64')],
    ['oversized', Buffer.concat([Buffer.from('3082ffff', 'hex'), Buffer.alloc(20_000, 0x30)])],
    ['empty', Buffer.alloc(0)],
  ];
  for (const [what, body] of cases) {
    const answer = await post(hub.hubId, body);
    t.is(answer.status, 200, what);
    t.is(answer.body.toString('hex'), MALFORMED.toString('hex'), what);
  }
  for (const path of ['not base64!', 'AAAA', encodeURIComponent(request.subarray(0, 10).toString('base64'))]) {
    const answer = await fetchBytes(`${ocspUrl(hub.hubId)}/${path}`);
    t.is(answer.status, 200, path);
    t.is(answer.body.toString('hex'), MALFORMED.toString('hex'), path);
  }
  // a certificate of another hub's CA, asked of this hub's responder; a hub that does not exist
  t.is((await post(hub.hubId, await requestDer(foreign))).body.toString('hex'), UNAUTHORIZED.toString('hex'));
  t.regex(await ocsp(hub.hubId, foreign, ['-cert', foreign.leafFile]), /Responder Error: unauthorized \(6\)/);
  t.is((await post('no-such-hub', request)).body.toString('hex'), UNAUTHORIZED.toString('hex'));
  t.is((await post('root', request)).body.toString('hex'), UNAUTHORIZED.toString('hex'));
  // mutations of a real request (a byte changed, cut short, a byte inserted), seeded: every answer is an
  // OCSPResponse (successful for a request that still reads, malformedRequest or unauthorized otherwise), HTTP 200
  let seed = 51;
  const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const statuses = new Set<number>();
  for (let i = 0; i < 150; i++) {
    const at = random(request.length);
    const mutated =
      i % 3 === 0
        ? Buffer.concat([request.subarray(0, at), Buffer.of(random(256)), request.subarray(at + 1)])
        : i % 3 === 1
          ? request.subarray(0, at)
          : Buffer.concat([request.subarray(0, at), Buffer.of(random(256)), request.subarray(at)]);
    const answer = await post(hub.hubId, mutated);
    t.is(answer.status, 200);
    t.is(answer.body[0], 0x30);
    // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED, ... }: the ENUMERATED's value after the SEQUENCE's header
    const header = answer.body[1] & 0x80 ? 2 + (answer.body[1] & 0x7f) : 2;
    t.is(answer.body[header], 0x0a);
    statuses.add(answer.body[header + 2]);
  }
  t.true(
    [...statuses].every((s) => s === 0 || s === 1 || s === 6),
    [...statuses].join(','),
  );
  t.true(statuses.has(1));
  // the responder still answers properly afterwards
  t.regex(await ocsp(hub.hubId, cert, ['-cert', cert.leafFile]), /: good\n/);
});
