/**
 * The PKI work of an enrollment as a fresh process meets it: CPU per enrollment of the first BENCH_COLD (600) fresh
 * device CSRs, each role in a `node` of its own started for the purpose (so V8 runs the ASN.1 code in its slow tiers,
 * as the web and the worker do after `npm start`), A and B alternating. An A/B of the PKI code without the HTTP,
 * PostgreSQL and Redis around it, which move end-to-end figures by more than such changes are worth on a shared
 * 2-core machine.
 *
 *   npm run bench:pki-cold        (BENCH_A_DIR: a checkout to compare with; BENCH_ROUNDS, BENCH_COLD)
 *
 * Roles: `web` is parseCsr (strict DER, schema parse, key policy, self-signature); `worker` is what the worker does
 * with a job (partsToCertify + issueCertificate + the PEM; a checkout without partsToCertify parses the CSR again with
 * readCsr, as the worker did before it). The CSRs, and the DER of their subject and key, are made by this process.
 * CPU from process.cpuUsage in the child, around the loop only.
 */
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, webcrypto } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as asn1js from 'asn1js';
import { CertificationRequest } from 'pkijs';
import { derToPem } from '../shared/pki/der.js';
import { buildName, OID } from '../shared/pki/names.js';
import { benchWorkspace } from './harness.js';

interface Sample {
  pem: string;
  /** base64 DER of the subject Name and of the SubjectPublicKeyInfo, as the CSR encodes them. */
  subjectDer: string;
  spki: string;
}

/** One role of one side, in this (fresh) process: milliseconds of CPU per enrollment. */
async function child(dir: string, role: string, file: string): Promise<void> {
  const samples: Sample[] = JSON.parse(readFileSync(file, 'utf8'));
  const csr = await import(path.join(dir, 'shared/pki/csr.ts'));
  const certs = await import(path.join(dir, 'shared/pki/certificates.ts'));
  const names = await import(path.join(dir, 'shared/pki/names.ts'));
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const issuer = {
    name: names.buildName([
      [names.OID.organization, 'edgehub'],
      [names.OID.commonName, 'bench CA'],
    ]),
    privateKey,
    keyIdentifier: createHash('sha1').update('bench').digest(),
  };
  const notBefore = new Date();
  const notAfter = new Date(notBefore.getTime() + 365 * 86_400_000);
  let bytes = 0;
  const started = process.cpuUsage();
  for (const s of samples) {
    if (role === 'web') {
      bytes += (await csr.parseCsr(s.pem)).subjectText.length;
      continue;
    }
    const parts = certs.partsToCertify
      ? certs.partsToCertify(Buffer.from(s.subjectDer, 'base64'), Buffer.from(s.spki, 'base64'))
      : (({ subject, subjectPublicKeyInfo }) => ({ subject, publicKey: subjectPublicKeyInfo }))(csr.readCsr(s.pem));
    const issued = await certs.issueCertificate({ ...parts, issuer, notBefore, notAfter, profile: { kind: 'client' } });
    bytes += certs.certificatePem(issued.der).length;
  }
  const used = process.cpuUsage(started);
  console.log(JSON.stringify({ ms: (used.user + used.system) / 1000 / samples.length, bytes }));
}

/** A PKCS#10 CSR for a fresh EC P-256 key, as bench/enroll.ts's devices make them, with its subject's and key's DER. */
async function sample(i: number): Promise<Sample> {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  const request = new CertificationRequest({
    subject: buildName([
      [OID.commonName, `device-${i}.bench.example`],
      [OID.organization, 'Bench'],
    ]),
  });
  await request.subjectPublicKeyInfo.importKey(keys.publicKey);
  await request.sign(keys.privateKey, 'SHA-256');
  const der = request.toSchema(true).toBER();
  const info = (asn1js.fromBER(der).result as asn1js.Sequence).valueBlock.value[0] as asn1js.Sequence;
  const raw = (n: number) => Buffer.from((info.valueBlock.value[n] as asn1js.BaseBlock).valueBeforeDecodeView).toString('base64');
  return { pem: derToPem(der, 'CERTIFICATE REQUEST'), subjectDer: raw(1), spki: raw(2) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const cold = Number(process.env.BENCH_COLD ?? 600);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
  const sides = [...(process.env.BENCH_A_DIR ? [['A', path.resolve(process.env.BENCH_A_DIR)]] : []), ['B', process.cwd()]];
  const ws = benchWorkspace({ budgetMs: 10 * 60_000 });
  try {
    const file = path.join(ws.work, 'csrs.json');
    writeFileSync(file, JSON.stringify(await Promise.all(Array.from({ length: cold }, (_, i) => sample(i)))));
    const results = new Map<string, number[]>();
    for (let round = 1; round <= rounds; round++) {
      const line: string[] = [];
      for (const role of ['web', 'worker']) {
        for (const [label, dir] of sides) {
          const out = execFileSync(process.execPath, ['--import', 'tsx', import.meta.filename, '--child', dir, role, file], { encoding: 'utf8' });
          const { ms } = JSON.parse(out.trim().split('\n').pop() as string);
          const key = `${role} ${label}`;
          results.set(key, [...(results.get(key) ?? []), ms]);
          line.push(`${key} ${ms.toFixed(3)}`);
        }
      }
      console.log(`round ${round}: ${line.join(', ')} ms CPU per enrollment`);
    }
    for (const [key, values] of results)
      console.log(`${key}: median ${median(values).toFixed(3)} ms CPU per enrollment (${values.map((v) => v.toFixed(3)).join(' ')})`);
  } finally {
    await ws.cleanUp();
  }
}

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4], process.argv[5]);
else await main();
