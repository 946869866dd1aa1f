/** Test helpers for the PKI tests: real keys and CSRs from the openssl CLI, and openssl's own verdicts. */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'pki-'));
let counter = 0;
const file = (ext: string) => path.join(dir, `f${++counter}.${ext}`);

export type KeySpec = 'ec256' | 'ec384' | 'ec521' | 'rsa2048' | 'rsa1024' | 'ed25519';

const keyArgs: Record<KeySpec, string[]> = {
  ec256: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  ec384: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  ec521: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-521'],
  rsa2048: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
  rsa1024: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:1024'],
  ed25519: ['-algorithm', 'ED25519'],
};

export async function makeKey(spec: KeySpec = 'ec256'): Promise<string> {
  const out = file('key');
  await run('openssl', ['genpkey', ...keyArgs[spec], '-out', out]);
  return out;
}

/** A PEM CSR with subject like `/CN=a/O=b`. */
export async function makeCsr(subject: string, spec: KeySpec = 'ec256'): Promise<string> {
  const key = await makeKey(spec);
  const { stdout } = await run('openssl', ['req', '-new', '-key', key, '-subj', subject]);
  return stdout;
}

/** A self-signed PEM certificate, as a customer would upload. */
export async function makeSelfSigned(subject: string): Promise<string> {
  const key = await makeKey('ec256');
  const { stdout } = await run('openssl', ['req', '-new', '-x509', '-key', key, '-subj', subject, '-days', '30']);
  return stdout;
}

/** The same CSR with one byte of its signature changed. */
export function tamperCsr(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  der[der.length - 2] ^= 0x01;
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${b64}\n-----END CERTIFICATE REQUEST-----\n`;
}

export async function x509Text(pem: string): Promise<string> {
  const f = file('pem');
  writeFileSync(f, pem);
  return (await run('openssl', ['x509', '-in', f, '-noout', '-text'])).stdout;
}

/** openssl verify of a leaf against the chain PEM (issuing CA then root): the root is trusted, the rest untrusted. */
export async function opensslVerify(leaf: string, chain: string): Promise<{ ok: boolean; output: string }> {
  const blocks = chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  const root = file('pem');
  const intermediates = file('pem');
  const leafFile = file('pem');
  writeFileSync(root, blocks[blocks.length - 1] ?? '');
  writeFileSync(intermediates, blocks.slice(0, -1).join(''));
  writeFileSync(leafFile, leaf);
  try {
    const { stdout, stderr } = await run('openssl', ['verify', '-CAfile', root, '-untrusted', intermediates, leafFile]);
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
