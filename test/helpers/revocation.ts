/** Helpers of the revocation tests: certificates issued through the API with their keys on disk, and openssl's verdicts. */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { HubFixture } from './stack.js';

export const run = promisify(execFile);
const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'revocation-'));
let counter = 0;

/** A file of ours holding `content`. */
export function file(content: string | Buffer, ext = 'pem'): string {
  const f = path.join(dir, `f${++counter}.${ext}`);
  writeFileSync(f, content);
  return f;
}

export interface IssuedCert {
  id: string;
  serialNumber: string;
  pem: string;
  leafFile: string;
  keyFile: string;
  /** The hub's issuing CA and the root, each in a file. */
  issuingFile: string;
  rootFile: string;
}

/** A certificate the hub's CA issues from a CSR of a fresh EC key, with its key and chain on disk. */
export async function issue(hub: HubFixture, name: string): Promise<IssuedCert> {
  const keyFile = path.join(dir, `k${++counter}.key`);
  await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile]);
  const { stdout: csr } = await run('openssl', ['req', '-new', '-key', keyFile, '-subj', `/CN=${name}.example.com`]);
  const created = await hub.call('POST', `${hub.h}/client-certificates`, { body: { name, value: csr } });
  if (created.status !== 201) throw new Error(`issuing failed: ${created.status} ${created.text}`);
  const got = await hub.call('GET', `${hub.h}/client-certificates/${created.json.id}`);
  const [issuing, root] = got.json.chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) as string[];
  return {
    id: created.json.id,
    serialNumber: got.json.serialNumber,
    pem: got.json.value,
    leafFile: file(got.json.value),
    keyFile,
    issuingFile: file(issuing),
    rootFile: file(root),
  };
}

/** GET or POST of the API without JSON: status, headers and the body's bytes. */
export async function fetchBytes(url: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** openssl's reading of a CRL (DER or PEM). */
export async function crlText(crl: Buffer): Promise<string> {
  const pem = crl.subarray(0, 5).toString() === '-----';
  return (await run('openssl', ['crl', '-inform', pem ? 'PEM' : 'DER', '-in', file(crl, 'crl'), '-noout', '-text'])).stdout;
}

/** A CRL (DER) as a PEM file. */
export async function crlFile(der: Buffer): Promise<string> {
  return file((await run('openssl', ['crl', '-inform', 'DER', '-in', file(der, 'crl')])).stdout);
}

/** `openssl verify` with the CRLs given: the root trusted, the issuing CA untrusted. */
export async function verifyWithCrl(cert: IssuedCert, crlFiles: string[], all = false): Promise<{ ok: boolean; output: string }> {
  const args = [
    'verify',
    all ? '-crl_check_all' : '-crl_check',
    ...crlFiles.flatMap((f) => ['-CRLfile', f]),
    '-CAfile',
    cert.rootFile,
    '-untrusted',
    cert.issuingFile,
    cert.leafFile,
  ];
  try {
    const { stdout, stderr } = await run('openssl', args);
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
