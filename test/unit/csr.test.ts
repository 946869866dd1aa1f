import test from 'ava';
import { execFileSync } from 'node:child_process';
import { sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as asn1js from 'asn1js';
import { parseCsr, subjectMismatches } from '../../shared/pki/csr.js';

const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'csr-unit-'));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

/** A CSR made by openssl with a key of `keyArgs` (genpkey arguments) and `subject`. */
function csr(name: string, keyArgs: string[], subject = '/CN=device-1/O=Acme/OU=Ops'): string {
  const key = path.join(dir, `${name}.key`);
  execFileSync('openssl', ['genpkey', ...keyArgs, '-out', key], { stdio: 'ignore' });
  return execFileSync('openssl', ['req', '-new', '-key', key, '-subj', subject, '-sha256'], { encoding: 'utf8' });
}

const derOf = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
const pemOf = (der: Buffer) => `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE REQUEST-----\n`;
const p256 = csr('p256', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']);

test('EC P-256, P-384 and RSA 2048 CSRs are accepted with their subject and key', async (t) => {
  const parsed = await parseCsr(p256);
  t.deepEqual([parsed.fields.commonName, parsed.fields.organization, parsed.fields.organizationalUnit], ['device-1', 'Acme', 'Ops']);
  t.regex(parsed.keyDescription, /P-256/);
  t.deepEqual(subjectMismatches(parsed, { commonName: 'device-1', organization: '' }), []);
  t.deepEqual(subjectMismatches(parsed, { commonName: 'other', organizationalUnit: 'Ops' }), ["CSR subject CN must be 'other' (got 'device-1')"]);
  t.regex((await parseCsr(csr('p384', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384']))).keyDescription, /P-384/);
  t.regex((await parseCsr(csr('rsa', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']))).keyDescription, /RSA/);
});

test('keys outside the policy are refused with a 400 that names what is accepted', async (t) => {
  for (const [name, args] of [
    ['ed25519', ['-algorithm', 'ED25519']],
    ['p521', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-521']],
    ['rsa1024', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:1024']],
  ] as const) {
    const pem = csr(name, [...args]);
    const err = (await t.throwsAsync(parseCsr(pem))) as Error & { code?: string };
    t.is(err.code, 'EH_CSR_INVALID', name);
    t.regex(err.message, /accepted|RSA/, name);
  }
});

test('malformed CSRs are refused: not PEM, trailing bytes, a changed subject, a truncated body', async (t) => {
  const der = derOf(p256);
  const refused = async (pem: string, why: RegExp) => {
    const err = (await t.throwsAsync(parseCsr(pem))) as Error & { code?: string };
    t.is(err.code, 'EH_CSR_INVALID');
    t.regex(err.message, why);
  };
  await refused('hello', /PEM block/);
  await refused(pemOf(Buffer.concat([der, Buffer.from([0])])), /DER/);
  await refused(pemOf(der.subarray(0, der.length - 5)), /DER|PKCS#10/);
  const changed = Buffer.from(der);
  const at = changed.indexOf(Buffer.from('device-1'));
  changed[at] = 'D'.charCodeAt(0);
  await refused(pemOf(changed), /signature does not verify/);
  t.is(readFileSync(path.join(dir, 'p256.key'), 'utf8').includes('PRIVATE KEY'), true);
});

/** A DER element around raw content, written by hand (the alterations below are what no ASN.1 library writes). */
function element(tag: number, ...parts: Buffer[]): Buffer {
  const content = Buffer.concat(parts);
  const n = content.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), content]);
}

/** The bytes of each child of a parsed constructed element, as they were. */
const parts = (der: Buffer | Uint8Array) =>
  (asn1js.fromBER(new Uint8Array(der)).result as asn1js.Sequence).valueBlock.value.map((e) => Buffer.from((e as asn1js.BaseBlock).valueBeforeDecodeView));

/** The P-256 CSR with its CertificationRequestInfo's children changed, signed again with its key (so the signature holds). */
function resigned(alter: (info: Buffer[]) => Buffer[]): string {
  const [info, algorithm] = parts(derOf(p256));
  const newInfo = element(0x30, ...alter(parts(info)));
  const signature = sign('sha256', newInfo, readFileSync(path.join(dir, 'p256.key'), 'utf8'));
  return pemOf(element(0x30, newInfo, algorithm, element(0x03, Buffer.from([0]), signature)));
}

test('inside the signed part: elements the schema skips and an EC point off its curve are refused', async (t) => {
  const refused = async (pem: string, why: RegExp, what: string) => {
    const err = (await t.throwsAsync(parseCsr(pem), undefined, what)) as Error & { code?: string };
    t.is(err.code, 'EH_CSR_INVALID', what);
    t.regex(err.message, why, what);
  };
  // the re-signing itself keeps a CSR valid
  t.is((await parseCsr(resigned((info) => info))).fields.commonName, 'device-1');
  const skipped = /it has elements the PKCS#10 schema does not have/;
  await refused(
    resigned((info) => [...info, element(0x30)]),
    skipped,
    'an element after the attributes',
  );
  await refused(
    resigned(([version, subject, spki, attributes]) => {
      const [algorithm, key] = parts(spki);
      return [version, subject, element(0x30, element(0x30, ...parts(algorithm), Buffer.from([0x05, 0x00])), key), attributes];
    }),
    skipped,
    "a third element in the key's AlgorithmIdentifier",
  );
  await refused(
    resigned(([version, subject, spki, attributes]) => {
      const [rdn, ...rest] = parts(subject);
      const [atv] = parts(rdn);
      const extra = element(0x30, ...parts(atv), Buffer.from([0x05, 0x00]));
      return [version, element(0x30, element(0x31, extra), ...rest), spki, attributes];
    }),
    skipped,
    'a third element in an AttributeTypeAndValue of the subject',
  );
  await refused(
    resigned(([version, subject, spki, attributes]) => {
      const [algorithm, key] = parts(spki);
      const offCurve = Buffer.from(key);
      offCurve[offCurve.length - 1] ^= 0x01;
      return [version, subject, element(0x30, algorithm, offCurve), attributes];
    }),
    /CSR signature could not be checked/,
    'an EC point off its curve',
  );
});
