import { readFileSync } from 'node:fs';
import { CertificationRequest, CertificationRequestInfo } from '@peculiar/asn1-csr';
import { AlgorithmIdentifier, Name, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { AsnParser } from '@peculiar/asn1-schema';
import { children, readElement } from '/work/main/shared/pki/der.ts';
const pem = readFileSync('/tmp/c.csr', 'utf8');
const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
const [info, alg] = children(readElement(der));
const [, subj, spki] = children(info);
const N = 20000;
function time(label: string, f: () => unknown) {
  for (let i = 0; i < 3000; i++) f();
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f();
  console.log(label, (Number(process.hrtime.bigint() - t) / N / 1000).toFixed(1), 'µs');
}
time('whole CertificationRequest', () => AsnParser.parse(der, CertificationRequest));
time('info only', () => AsnParser.parse(info.raw, CertificationRequestInfo));
time('alg only', () => AsnParser.parse(alg.raw, AlgorithmIdentifier));
time('name only', () => AsnParser.parse(subj.raw, Name));
time('spki only', () => AsnParser.parse(spki.raw, SubjectPublicKeyInfo));
