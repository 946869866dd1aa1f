/**
 * An agent's certificate has an end (a year after enrollment). `edgehub agent run` with an expired one refuses to
 * start and says what to do (every edge would refuse it, and the agent would only retry); within 30 days of the end
 * it says so when it starts (and once a day while it runs). The identity folders here are written by hand, with
 * certificates of chosen validity.
 */
import { spawn } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { Certificate } from 'pkijs';
import { certificatePem, issueCertificate, publicKeyInfo } from '../../shared/pki/certificates.js';
import { edgehubCli } from '../helpers/agents.js';
import { makeSelfSigned } from '../helpers/pki.js';
import { waitFor } from '../helpers/stack.js';

const DAY = 24 * 60 * 60_000;

/** An identity folder whose agent.crt is valid from `notBefore` to `notAfter`. */
async function identityValid(notBefore: Date, notAfter: Date): Promise<string> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const named = Certificate.fromBER(Buffer.from((await makeSelfSigned('/CN=agent-test')).replace(/-----[^-]+-----|\s/g, ''), 'base64'));
  const issued = await issueCertificate({
    subject: named.subject,
    publicKey: publicKeyInfo(publicKey.export({ type: 'spki', format: 'der' })),
    issuer: { name: named.subject, privateKey: createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' })), keyIdentifier: Buffer.alloc(20, 1) },
    notBefore,
    notAfter,
    profile: { kind: 'client' },
  });
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-expiry-'));
  writeFileSync(path.join(dir, 'agent.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
  writeFileSync(path.join(dir, 'agent.crt'), certificatePem(issued.der));
  writeFileSync(path.join(dir, 'edge-ca.pem'), '');
  const meta = { id: 'agent-1', hubId: 'hub-1', envZId: 'env1', edges: ['127.0.0.1:9'], edgeServerName: '', serviceUrl: 'http://127.0.0.1:9' };
  writeFileSync(path.join(dir, 'agent.json'), JSON.stringify(meta));
  return dir;
}

test('an expired certificate: agent run refuses to start, names the date and how to enroll again', async (t) => {
  const end = new Date(Date.now() - 2 * DAY);
  const dir = await identityValid(new Date(Date.now() - 400 * DAY), end);
  const r = await edgehubCli(['agent', 'run', '--dir', dir]);
  t.is(r.code, 1, r.stderr);
  t.regex(r.stderr, new RegExp(`the certificate of agent agent-1 expired at ${end.toISOString().slice(0, 16)}`));
  t.regex(r.stderr, /edgehub agent enroll <jwt>/);
  t.regex(r.stderr, /POST \/hub\/hub-1\/environments\/env1\/agent-enrollment/);
  t.notRegex(r.stdout, /running/);
});

test('a certificate within 30 days of its end: agent run starts and warns', async (t) => {
  const dir = await identityValid(new Date(Date.now() - DAY), new Date(Date.now() + 10 * DAY + 60_000));
  const child = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    await waitFor(async () => /running \(Ctrl-C stops it\)/.test(output), { what: 'the agent running', timeoutMs: 10_000 });
    t.regex(output, /warning: the certificate of agent agent-1 expires at \S+ \(in 10 days\)/);
  } finally {
    child.kill('SIGTERM');
  }
});

test('a certificate far from its end: no word of it', async (t) => {
  const dir = await identityValid(new Date(Date.now() - DAY), new Date(Date.now() + 300 * DAY));
  const child = spawn(process.execPath, ['agent/bin/edgehub.js', 'agent', 'run', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    await waitFor(async () => /running \(Ctrl-C stops it\)/.test(output), { what: 'the agent running', timeoutMs: 10_000 });
    t.notRegex(output, /expire/);
  } finally {
    child.kill('SIGTERM');
  }
});
