/**
 * The enrollment client (`edgehub enroll <jwt>` of the agent package) run as a child process against the test stack: it enrolls and
 * writes a key and certificate that openssl accepts, validates without spending, and refuses (one line on stderr,
 * non-zero exit, nothing written, nothing sent) JWTs with a bad signature, unknown kid, wrong iss, aud, exp or url
 * host. JWTs with wrong claims are signed with the service's own active key, so only the claim is wrong.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { SignJWT } from 'jose';
import { activeSigningKey } from '../../domain/commands/signingKeys.js';
import { opensslVerify, x509Text } from '../helpers/pki.js';
import { type HubFixture, useStack } from '../helpers/stack.js';
import { repoRoot } from '../helpers/repo.js';

const runFile = promisify(execFile);
const root = repoRoot;

const stack = useStack(test);
let hub: HubFixture;
test.before(async () => {
  hub = await stack.hub({ name: 'enroll-client' });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The agent package's `edgehub` command, as its package.json's bin names it. */
const bin = path.join(root, 'agent', JSON.parse(readFileSync(path.join(root, 'agent', 'package.json'), 'utf8')).bin.edgehub);

/** Runs the client as a recipient would (the installed package runs the same file: test/system/agent-package.test.ts). */
async function edgehub(args: string[]): Promise<Run> {
  const [cmd, argv] = [process.execPath, [bin, ...args]];
  try {
    const { stdout, stderr } = await runFile(cmd, argv, { cwd: root, env: { ...process.env, NODE_OPTIONS: '' } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const outDir = () => mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'enroll-'));

async function tokenWithJwt(body: Record<string, unknown>) {
  const tok = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body });
  if (tok.status !== 201) throw new Error(`token: ${tok.status} ${tok.text}`);
  const jwt = await hub.call('GET', `${hub.h2}/certificate-request-tokens/${tok.json.id}/enrollment-jwt`);
  if (jwt.status !== 200) throw new Error(`jwt: ${jwt.status} ${jwt.text}`);
  return { token: tok.json, jwt: jwt.json.jwt as string, url: jwt.json.url as string };
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

/** A JWT like `jwt` with some claims changed, signed by the service's active key (or `key`/`kid` when given). */
async function resigned(jwt: string, changes: Record<string, unknown>, signer?: { key: import('node:crypto').KeyObject; kid: string }) {
  const active =
    signer ??
    (await (async () => {
      const k = await activeSigningKey({ fresh: true });
      return { key: k.privateKey, kid: k.kid };
    })());
  const claims = { ...claimsOf(jwt), ...changes };
  for (const [k, v] of Object.entries(claims)) if (v === undefined) delete claims[k];
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: active.kid, typ: 'JWT' }).sign(active.key);
}

/** The token is unspent: validate-only says it would be accepted. */
async function stillUsable(t: import('ava').ExecutionContext, jwt: string) {
  const r = await edgehub(['enroll', jwt, '--validate']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /would be accepted/);
}

test('enroll verifies, makes a key and CSR with the claimed subject, and writes <name>.crt (with chain) and <name>.key 0600', async (t) => {
  const { jwt, url } = await tokenWithJwt({ name: 'edge-box', commonName: 'edge-box.example.com', organization: 'Acme', organizationalUnit: 'Ops' });
  const out = outDir();
  const r = await edgehub(['enroll', jwt, '--out', out]);
  t.is(r.code, 0, r.stderr);
  t.is(r.stderr, '');
  // without --expect-host the host is printed first
  t.true(r.stdout.includes(`enrollment endpoint: ${url}`), r.stdout);
  t.regex(r.stdout, /wrote .*edge-box\.crt and .*edge-box\.key/);
  const crt = readFileSync(path.join(out, 'edge-box.crt'), 'utf8');
  const keyFile = path.join(out, 'edge-box.key');
  t.is(statSync(keyFile).mode & 0o777, 0o600);
  const blocks: string[] = crt.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/g) ?? [];
  t.is(blocks.length, 3, 'leaf, issuing CA, root');
  t.true((await opensslVerify(blocks[0], blocks.slice(1).join(''))).ok);
  t.regex(await x509Text(blocks[0]), /Subject: CN ?= ?edge-box\.example\.com, O ?= ?Acme, OU ?= ?Ops/);
  // the key is the certificate's
  const { stdout: certPub } = await runFile('openssl', ['x509', '-noout', '-pubkey', '-in', path.join(out, 'edge-box.crt')]);
  const { stdout: keyPub } = await runFile('openssl', ['pkey', '-pubout', '-in', keyFile]);
  t.is(certPub, keyPub);
  t.regex((await runFile('openssl', ['pkey', '-text', '-noout', '-in', keyFile])).stdout, /prime256v1|P-256/);
  const list = await hub.call('GET', `${hub.h}/client-certificates?size=100`);
  t.true(list.json.content.some((c: { name: string }) => c.name === 'edge-box'));

  // the JWT is spent: a second run is refused by the service, in one line, and writes nothing
  const again = await edgehub(['enroll', jwt, '--out', outDir()]);
  t.is(again.code, 1);
  t.regex(again.stderr, /^edgehub: enrollment refused \(403\): .*already used\n$/);
});

test("edgehub enroll through the agent package's bin, with --expect-host pinned; a name without cn becomes the CN", async (t) => {
  const { jwt } = await tokenWithJwt({ name: 'npx-box' });
  const out = outDir();
  const host = new URL(stack.baseUrl).host;
  const r = await edgehub(['enroll', jwt, '--out', out, '--expect-host', host]);
  t.is(r.code, 0, r.stderr);
  t.is(r.stderr, '');
  t.notRegex(r.stdout, /enrollment endpoint/, 'a pinned host is not printed as a default');
  t.regex(await x509Text(readFileSync(path.join(out, 'npx-box.crt'), 'utf8')), /Subject: CN ?= ?npx-box/);
});

test('--validate prints violations and spends nothing', async (t) => {
  const { jwt } = await tokenWithJwt({ name: 'check-me', commonName: 'check-me' });
  await stillUsable(t, jwt);
  await stillUsable(t, jwt);
  const out = outDir();
  t.is((await edgehub(['enroll', jwt, '--out', out])).code, 0);
  const spent = await edgehub(['enroll', jwt, '--validate']);
  t.is(spent.code, 1);
  t.regex(spent.stdout, /^violation \$\.jwt spent: .*already used/m);
});

const refusals: [string, (jwt: string) => Promise<string>, string[], RegExp][] = [
  [
    'a signature by another key under the same kid',
    async (jwt) => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      return resigned(jwt, {}, { key: privateKey, kid: JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString()).kid });
    },
    [],
    /^edgehub: refused: the JWT's signature does not verify against the key set at http:\/\/.*\/hub\/v2\/public\/\.well-known\/jwks\.json$/,
  ],
  [
    'an unknown kid',
    async (jwt) => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      return resigned(jwt, {}, { key: privateKey, kid: 'not-a-key-of-the-service' });
    },
    [],
    /^edgehub: refused: the JWT's signing key \(kid\) is not in the key set at /,
  ],
  ['a wrong iss', (jwt) => resigned(jwt, { iss: 'someone-else' }), [], /^edgehub: refused: the JWT's issuer \(iss\) is 'someone-else', expected 'hub'$/],
  [
    'a wrong aud',
    (jwt) => resigned(jwt, { aud: 'another-hub' }),
    [],
    /^edgehub: refused: the JWT's audience \(aud\) is 'another-hub', expected the hub of its url/,
  ],
  ['an expired exp', (jwt) => resigned(jwt, { exp: Math.floor(Date.now() / 1000) - 60 }), [], /^edgehub: refused: the JWT expired at \d{4}-/],
  ['no exp', (jwt) => resigned(jwt, { exp: undefined }), [], /^edgehub: refused: the JWT's 'exp' claim is invalid/],
  [
    'a url on a host other than --expect-host',
    async (jwt) => jwt,
    ['--expect-host', 'enroll.example.com'],
    /^edgehub: refused: the JWT's enrollment url is on host '127\.0\.0\.1:\d+', expected 'enroll\.example\.com'$/,
  ],
  [
    'a url moved to another host (localhost) while 127.0.0.1 is expected',
    async (jwt) => resigned(jwt, { url: claimsOf(jwt).url.replace('127.0.0.1', 'localhost') }),
    ['--expect-host', '127.0.0.1'],
    /^edgehub: refused: the JWT's enrollment url is on host 'localhost:\d+', expected '127\.0\.0\.1'$/,
  ],
  [
    'a url that is not an enrollment endpoint',
    (jwt) => resigned(jwt, { url: 'http://127.0.0.1:1/somewhere' }),
    [],
    /^edgehub: refused: the JWT's 'url' claim is not an enrollment endpoint/,
  ],
  [
    'a header that names its own key (jku)',
    async (jwt) => {
      const k = await activeSigningKey({ fresh: true });
      return new SignJWT(claimsOf(jwt)).setProtectedHeader({ alg: 'ES256', kid: k.kid, jku: 'http://127.0.0.1:1/keys' }).sign(k.privateKey);
    },
    [],
    /^edgehub: refused: the JWT header must not name its own key/,
  ],
  ['garbage', async () => 'not.a-jwt', [], /^edgehub: the argument is not a compact JWT/],
];

for (const [what, make, extra, message] of refusals) {
  test(`refuses ${what}: one line on stderr, exit 1, nothing written or spent`, async (t) => {
    const { jwt } = await tokenWithJwt({ name: `r-${Math.random().toString(36).slice(2, 10)}`, commonName: 'refusal' });
    const bad = await make(jwt);
    const out = outDir();
    for (const args of [
      ['enroll', bad, '--out', out, ...extra],
      ['enroll', bad, '--validate', ...extra],
    ]) {
      const r = await edgehub(args);
      t.is(r.code, 1, r.stdout + r.stderr);
      const lines = r.stderr.split('\n').filter(Boolean);
      t.is(lines.length, 1, r.stderr);
      t.regex(lines[0], message);
      t.notRegex(r.stdout, /wrote|violation|valid/);
    }
    t.deepEqual(readdir(out), []);
    await stillUsable(t, jwt);
  });
}

const readdir = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

test('a JWT signed by a rotated-in key is verified after the key set is re-read; existing files are never overwritten', async (t) => {
  const rotated = await stack.call('POST', '/admin/v1/signing-keys:rotate', { auth: stack.admin });
  t.is(rotated.status, 200, rotated.text);
  const { jwt } = await tokenWithJwt({ name: 'after-rotation' });
  const header = JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString());
  t.is(header.kid, rotated.json.kid ?? header.kid);
  const out = outDir();
  writeFileSync(path.join(out, 'after-rotation.key'), 'precious\n');
  const refused = await edgehub(['enroll', jwt, '--out', out]);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /^edgehub: .*after-rotation\.key already exists/);
  t.is(readFileSync(path.join(out, 'after-rotation.key'), 'utf8'), 'precious\n');
  const r = await edgehub(['enroll', jwt, '--out', outDir()]);
  t.is(r.code, 0, r.stderr);
});

test('usage errors are one line and exit 2', async (t) => {
  for (const args of [[], ['enrol', 'x'], ['enroll'], ['enroll', 'a', 'b'], ['enroll', 'x', '--bogus']]) {
    const r = await edgehub(args);
    t.is(r.code, 2, args.join(' '));
    t.is(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
    t.regex(r.stderr, /^edgehub: /);
  }
});
