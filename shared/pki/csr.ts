import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { badRequest } from '../errors.js';
import { CertificationRequest } from '@peculiar/asn1-csr';
import { AsnParser } from '@peculiar/asn1-schema';
import { assertDer, children, decodeOid, pemToDer, readElement, type DerElement } from './der.js';
import { nameToString, readName, subjectFields, type Rdns, type SubjectFields } from './names.js';

/** Signature algorithms a CSR may be signed with, by OID. */
const SIGNATURE_ALGORITHMS: Record<string, { hash: string; keyType: 'rsa' | 'ec' }> = {
  '1.2.840.113549.1.1.11': { hash: 'sha256', keyType: 'rsa' },
  '1.2.840.113549.1.1.12': { hash: 'sha384', keyType: 'rsa' },
  '1.2.840.113549.1.1.13': { hash: 'sha512', keyType: 'rsa' },
  '1.2.840.10045.4.3.2': { hash: 'sha256', keyType: 'ec' },
  '1.2.840.10045.4.3.3': { hash: 'sha384', keyType: 'ec' },
  '1.2.840.10045.4.3.4': { hash: 'sha512', keyType: 'ec' },
};


export interface ParsedCsr {
  /** DER of the subject Name, exactly as the requester signed it. */
  subjectDer: Buffer;
  subject: Rdns;
  subjectText: string;
  fields: ReturnType<typeof subjectFields>;
  /** DER of the SubjectPublicKeyInfo, as signed. */
  spkiDer: Buffer;
  /** e.g. `EC P-256`, `RSA 2048`. */
  keyDescription: string;
}

export const isCsrPem = (pem: string) => /-----BEGIN (NEW )?CERTIFICATE REQUEST-----/.test(pem);

const EC_PUBLIC_KEY = '1.2.840.10045.2.1';
const RSA_ENCRYPTION = '1.2.840.113549.1.1.1';
const EC_CURVES: Record<string, { name: string; jwkCrv: string; coordinateBytes: number }> = {
  '1.2.840.10045.3.1.7': { name: 'P-256', jwkCrv: 'P-256', coordinateBytes: 32 },
  '1.3.132.0.34': { name: 'P-384', jwkCrv: 'P-384', coordinateBytes: 48 },
};
const ACCEPTED = 'accepted: EC P-256, EC P-384, RSA 2048-4096 with exponent 65537';
/** The largest RSA key accepted, and the only public exponent: bounds the cost of checking a CSR's signature. */
const RSA_MAX_BITS = 4096;
const RSA_EXPONENT = 65537n;
/** A 4096-bit RSA SubjectPublicKeyInfo is about 550 bytes: anything much larger is refused before it is parsed. */
const SPKI_MAX_BYTES = 1024;

/** How many CSR signatures this process checked (the costly step of a CSR; tests read it to see what was skipped). */
export const csrStats = { signatureChecks: 0 };

/** The DER pieces of a CSR: the signed info, its subject and key, and the signature. Structure only, no checks. */
export interface CsrParts {
  info: Buffer;
  subjectDer: Buffer;
  spkiDer: Buffer;
  signatureAlgorithm: string;
  signature: Buffer;
}

/** The CSR's DER from its PEM block, refused (400) unless it is exactly one DER structure with nothing after it. */
function csrDer(pem: string): Buffer {
  if (typeof pem !== 'string' || !isCsrPem(pem)) throw badRequest('CSR must be a PEM block "-----BEGIN CERTIFICATE REQUEST-----"');
  const der = pemToDer(pem, ['CERTIFICATE REQUEST', 'NEW CERTIFICATE REQUEST']);
  if (!der) throw badRequest('CSR PEM is not valid base64 between its BEGIN and END lines');
  try {
    assertDer(der);
  } catch (err) {
    throw badRequest(`CSR is not a DER-encoded PKCS#10 certification request (${(err as Error).message})`);
  }
  return der;
}

/** What the rest of the checks need from a CSR. */
interface ReadCsr extends CsrParts {
  keyAlgorithm: string;
  keyParameters?: DerElement;
  /** The subjectPublicKey BIT STRING's bits (whole bytes). */
  keyBits: Buffer;
}

/** The one element of an ASN.1 ANY (the library hands it over as its DER). */
function anyElement(value: ArrayBuffer | undefined): DerElement | undefined {
  return value ? readElement(Buffer.from(value)) : undefined;
}

/**
 * The signed pieces of a CSR whose DER csrDer checked, sliced from it as they are (re-encoding could change them),
 * with two checks the schema parse does not make: an AlgorithmIdentifier with more than an algorithm and its
 * parameters (the unsigned signatureAlgorithm could carry anything) and BIT STRINGs with unused bits.
 */
function slices(der: Buffer): CsrParts & { keyBits: Buffer } {
  try {
    const [infoEl, algorithmEl, signatureEl] = children(readElement(der));
    const [, subjectEl, spkiEl] = children(infoEl);
    const [keyAlgorithmEl, keyEl] = children(spkiEl);
    const [oidEl, , extra] = children(algorithmEl);
    if (extra || children(keyAlgorithmEl).length > 2) throw new Error('an AlgorithmIdentifier has more than an algorithm and its parameters');
    if (signatureEl.content[0] !== 0) throw new Error('signature BIT STRING with unused bits');
    if (keyEl.content[0] !== 0) throw new Error('subjectPublicKey BIT STRING with unused bits');
    return {
      info: infoEl.raw,
      subjectDer: subjectEl.raw,
      spkiDer: spkiEl.raw,
      signatureAlgorithm: decodeOid(oidEl.content),
      signature: signatureEl.content.subarray(1),
      keyBits: keyEl.content.subarray(1),
    };
  } catch (err) {
    throw badRequest(`CSR is not a valid PKCS#10 certification request (${(err as Error).message})`);
  }
}

/**
 * The CSR parsed against the PKCS#10 schema (RFC 2986) by @peculiar/asn1-csr on @peculiar/asn1-schema: every field
 * of the right type, version 1, nothing missing. The DER under it was checked by csrDer (definite minimal lengths,
 * universal types as DER has them, nothing left over at any level), which the schema parse does not do.
 */
function readCsr(der: Buffer): ReadCsr {
  let request: CertificationRequest;
  try {
    request = AsnParser.parse(der, CertificationRequest);
  } catch (err) {
    throw badRequest(`CSR is not a valid PKCS#10 certification request (${(err as Error).message})`);
  }
  const info = request.certificationRequestInfo;
  if (info.version !== 0) throw badRequest(`CSR version must be 1 (encoded 0), got ${info.version}`);
  const parts = slices(der);
  let keyParameters: DerElement | undefined;
  try {
    keyParameters = anyElement(info.subjectPKInfo.algorithm.parameters ?? undefined);
  } catch {
    throw badRequest('CSR public key could not be read');
  }
  return { ...parts, keyAlgorithm: info.subjectPKInfo.algorithm.algorithm, keyParameters };
}

/**
 * The pieces of a CSR that the web process parsed and verified before (the worker's copy of it, through the job):
 * strict DER and the signed pieces, without parsing the schema a second time.
 */
export function csrParts(pem: string): CsrParts {
  const { info, subjectDer, spkiDer, signatureAlgorithm, signature } = slices(csrDer(pem));
  return { info, subjectDer, spkiDer, signatureAlgorithm, signature };
}

/**
 * The CSR's public key, checked against what we accept. EC keys are imported as JWK from the decoded point, which
 * is several times cheaper in node:crypto than decoding the SPKI DER.
 */
function publicKeyOf(csr: ReadCsr): { key: KeyObject; description: string; type: 'ec' | 'rsa' } {
  const { spkiDer, keyAlgorithm: algorithm, keyParameters: parameters, keyBits: bits } = csr;
  if (spkiDer.length > SPKI_MAX_BYTES) throw badRequest(`CSR public key is too large (${spkiDer.length} bytes); ${ACCEPTED}`);
  if (algorithm === EC_PUBLIC_KEY) {
    const curveOid = parameters?.tag === 0x06 ? decodeOid(parameters.content) : 'unknown';
    const curve = EC_CURVES[curveOid];
    if (!curve) throw badRequest(`CSR public key is on EC curve ${CURVE_NAMES[curveOid] ?? curveOid}; ${ACCEPTED}`);
    const n = curve.coordinateBytes;
    if (bits.length !== 1 + 2 * n || bits[0] !== 0x04) throw badRequest('CSR public key is not an uncompressed EC point');
    try {
      const key = createPublicKey({
        key: { kty: 'EC', crv: curve.jwkCrv, x: bits.subarray(1, 1 + n).toString('base64url'), y: bits.subarray(1 + n).toString('base64url') },
        format: 'jwk',
      });
      return { key, description: `EC ${curve.name}`, type: 'ec' };
    } catch {
      throw badRequest('CSR public key is not a valid point on its curve');
    }
  }
  if (algorithm === RSA_ENCRYPTION) {
    let key: KeyObject;
    try {
      key = createPublicKey({ key: spkiDer, format: 'der', type: 'spki' });
    } catch {
      throw badRequest('CSR public key could not be read');
    }
    const size = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (size < 2048) throw badRequest(`CSR public key is RSA ${size} bits; at least 2048 bits are required`);
    if (size > RSA_MAX_BITS) throw badRequest(`CSR public key is RSA ${size} bits; at most ${RSA_MAX_BITS} bits are accepted`);
    const exponent = key.asymmetricKeyDetails?.publicExponent;
    if (exponent !== RSA_EXPONENT) throw badRequest(`CSR public key has RSA public exponent ${String(exponent)}; only 65537 is accepted`);
    return { key, description: `RSA ${size}`, type: 'rsa' };
  }
  throw badRequest(`CSR public key type ${KEY_TYPE_NAMES[algorithm] ?? algorithm} is not accepted; ${ACCEPTED}`);
}

const CURVE_NAMES: Record<string, string> = { '1.3.132.0.35': 'P-521 (secp521r1)', '1.3.132.0.10': 'secp256k1' };
const KEY_TYPE_NAMES: Record<string, string> = { '1.3.101.112': 'Ed25519', '1.3.101.113': 'Ed448', '1.2.840.113549.1.1.10': 'RSASSA-PSS', '1.2.840.10040.4.1': 'DSA' };

/**
 * Parses a PEM CSR and verifies its self-signature (proof that the requester holds the private key). Every refusal
 * is a 400 that says why.
 */
export function parseCsr(pem: string): ParsedCsr {
  const parts = readCsr(csrDer(pem));
  const { key, description, type } = publicKeyOf(parts);
  const algorithm = SIGNATURE_ALGORITHMS[parts.signatureAlgorithm];
  if (!algorithm) throw badRequest(`CSR signature algorithm ${parts.signatureAlgorithm} is not accepted; use SHA-256/384/512 with RSA or ECDSA`);
  if (algorithm.keyType !== type) throw badRequest('CSR signature algorithm does not match its public key type');
  csrStats.signatureChecks++;
  if (!verify(algorithm.hash, parts.info, key, parts.signature)) throw badRequest('CSR signature does not verify: it was not signed by the key it carries');
  let subject: Rdns;
  try {
    subject = readName(parts.subjectDer);
  } catch (err) {
    throw badRequest(`CSR subject could not be read (${(err as Error).message})`);
  }
  return { subjectDer: parts.subjectDer, subject, subjectText: nameToString(subject), fields: subjectFields(subject), spkiDer: parts.spkiDer, keyDescription: description };
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

