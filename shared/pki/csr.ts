import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Name, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { badRequest } from '../errors.js';
import { children, pemToDer, readElement } from './der.js';
import { nameToString, subjectFields, type SubjectFields } from './names.js';

/** Signature algorithms a CSR may be signed with, by OID. */
const SIGNATURE_ALGORITHMS: Record<string, { hash: string; keyType: 'rsa' | 'ec' }> = {
  '1.2.840.113549.1.1.11': { hash: 'sha256', keyType: 'rsa' },
  '1.2.840.113549.1.1.12': { hash: 'sha384', keyType: 'rsa' },
  '1.2.840.113549.1.1.13': { hash: 'sha512', keyType: 'rsa' },
  '1.2.840.10045.4.3.2': { hash: 'sha256', keyType: 'ec' },
  '1.2.840.10045.4.3.3': { hash: 'sha384', keyType: 'ec' },
  '1.2.840.10045.4.3.4': { hash: 'sha512', keyType: 'ec' },
};

const ACCEPTED_CURVES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384' };

export interface ParsedCsr {
  subject: Name;
  subjectText: string;
  fields: ReturnType<typeof subjectFields>;
  /** DER of the SubjectPublicKeyInfo, as signed. */
  spkiDer: Buffer;
  publicKey: KeyObject;
  /** e.g. `EC P-256`, `RSA 2048`. */
  keyDescription: string;
}

export const isCsrPem = (pem: string) => /-----BEGIN (NEW )?CERTIFICATE REQUEST-----/.test(pem);

function describeKey(key: KeyObject): string {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < 2048) throw badRequest(`CSR public key is RSA ${bits} bits; at least 2048 bits are required`);
    return `RSA ${bits}`;
  }
  if (key.asymmetricKeyType === 'ec') {
    const curve = ACCEPTED_CURVES[details.namedCurve ?? ''];
    if (!curve) throw badRequest(`CSR public key is on curve ${details.namedCurve ?? 'unknown'}; accepted: EC P-256, EC P-384, RSA >= 2048`);
    return `EC ${curve}`;
  }
  throw badRequest(`CSR public key type ${key.asymmetricKeyType ?? 'unknown'} is not accepted; accepted: EC P-256, EC P-384, RSA >= 2048`);
}

/**
 * Parses a PEM CSR and verifies its self-signature (proof that the requester holds the private key). Every refusal
 * is a 400 that says why.
 */
export function parseCsr(pem: string): ParsedCsr {
  if (typeof pem !== 'string' || !isCsrPem(pem)) throw badRequest('CSR must be a PEM block "-----BEGIN CERTIFICATE REQUEST-----"');
  const der = pemToDer(pem, ['CERTIFICATE REQUEST', 'NEW CERTIFICATE REQUEST']);
  if (!der) throw badRequest('CSR PEM is not valid base64 between its BEGIN and END lines');
  let info: Buffer, algorithmOid: string, signature: Buffer, subjectDer: Buffer, spkiDer: Buffer;
  try {
    const outer = readElement(der);
    const [infoEl, algorithmEl, signatureEl] = children(outer);
    if (outer.tag !== 0x30 || !infoEl || !algorithmEl || signatureEl?.tag !== 0x03) throw new Error('not a CertificationRequest');
    info = infoEl.raw;
    const [, subjectEl, spkiEl] = children(infoEl);
    if (subjectEl?.tag !== 0x30 || spkiEl?.tag !== 0x30) throw new Error('not a CertificationRequestInfo');
    subjectDer = subjectEl.raw;
    spkiDer = spkiEl.raw;
    algorithmOid = AsnConvert.parse(algorithmEl.raw, AlgorithmIdentifier).algorithm;
    signature = signatureEl.content.subarray(1);
  } catch (err) {
    throw badRequest(`CSR is not a valid PKCS#10 certification request (${(err as Error).message})`);
  }
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: spkiDer, format: 'der', type: 'spki' });
  } catch {
    throw badRequest('CSR public key could not be read');
  }
  const keyDescription = describeKey(publicKey);
  const algorithm = SIGNATURE_ALGORITHMS[algorithmOid];
  if (!algorithm) throw badRequest(`CSR signature algorithm ${algorithmOid} is not accepted; use SHA-256/384/512 with RSA or ECDSA`);
  if (algorithm.keyType !== publicKey.asymmetricKeyType) throw badRequest('CSR signature algorithm does not match its public key type');
  if (!verify(algorithm.hash, info, publicKey, signature)) throw badRequest('CSR signature does not verify: it was not signed by the key it carries');
  let subject: Name;
  try {
    subject = AsnConvert.parse(subjectDer, Name);
    AsnConvert.parse(spkiDer, SubjectPublicKeyInfo);
  } catch (err) {
    throw badRequest(`CSR subject could not be read (${(err as Error).message})`);
  }
  return { subject, subjectText: nameToString(subject), fields: subjectFields(subject), spkiDer, publicKey, keyDescription };
}

/** Each subject field the token sets that the CSR does not match, as a sentence. */
export function subjectMismatches(csr: ParsedCsr, required: { [K in keyof SubjectFields]?: string | null }): string[] {
  const labels: [keyof SubjectFields, string][] = [
    ['commonName', 'CN'],
    ['organization', 'O'],
    ['organizationalUnit', 'OU'],
  ];
  const out: string[] = [];
  for (const [field, short] of labels) {
    const want = required[field];
    if (want === undefined || want === null || want === '') continue;
    const got = csr.fields.all[field];
    if (got.length !== 1 || got[0] !== want) {
      out.push(`CSR subject ${short} must be '${want}' (got ${got.length ? got.map((g) => `'${g}'`).join(', ') : 'none'})`);
    }
  }
  return out;
}

