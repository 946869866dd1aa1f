import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import * as asn1js from 'asn1js';
import { CertificationRequest, RSAPublicKey } from 'pkijs';
import { refusal } from '../errors.js';
import { assertDer, pemToDer } from './der.js';
import { nameEntries, nameToString, subjectFields, type NameEntries, type SubjectFields } from './names.js';

/**
 * PKCS#10 certification requests (RFC 2986) on pkijs: the schema parse and the signature check are the library's.
 * In front of it stays the strict DER check (shared/pki/der.ts), which asn1js does not make, and behind it a count
 * of the parsed elements that refuses those the schema does not have (pkijs skips them); then the key policy below.
 */

/** Signature algorithms a CSR may be signed with, by OID: the key type and the hash. */
const SIGNATURE_ALGORITHMS: Record<string, { keyType: 'rsa' | 'ec'; hash: string }> = {
  '1.2.840.113549.1.1.11': { keyType: 'rsa', hash: 'sha256' }, // sha256WithRSAEncryption
  '1.2.840.113549.1.1.12': { keyType: 'rsa', hash: 'sha384' }, // sha384WithRSAEncryption
  '1.2.840.113549.1.1.13': { keyType: 'rsa', hash: 'sha512' }, // sha512WithRSAEncryption
  '1.2.840.10045.4.3.2': { keyType: 'ec', hash: 'sha256' }, // ecdsa-with-SHA256
  '1.2.840.10045.4.3.3': { keyType: 'ec', hash: 'sha384' }, // ecdsa-with-SHA384
  '1.2.840.10045.4.3.4': { keyType: 'ec', hash: 'sha512' }, // ecdsa-with-SHA512
};

export interface ParsedCsr {
  request: CertificationRequest;
  subject: NameEntries;
  subjectText: string;
  fields: ReturnType<typeof subjectFields>;
  /** DER of the SubjectPublicKeyInfo, the bytes that were signed. */
  spkiDer: Buffer;
  /** DER of the subject Name, the bytes that were signed. */
  subjectDer: Buffer;
  /** e.g. `EC P-256`, `RSA 2048`. */
  keyDescription: string;
}

export const isCsrPem = (pem: string) => /-----BEGIN (NEW )?CERTIFICATE REQUEST-----/.test(pem);

const EC_PUBLIC_KEY = '1.2.840.10045.2.1';
const RSA_ENCRYPTION = '1.2.840.113549.1.1.1';
const EC_CURVES: Record<string, { name: string; coordinateBytes: number }> = {
  '1.2.840.10045.3.1.7': { name: 'P-256', coordinateBytes: 32 },
  '1.3.132.0.34': { name: 'P-384', coordinateBytes: 48 },
};
const ACCEPTED = 'accepted: EC P-256, EC P-384, RSA 2048-4096 with exponent 65537';
/** The largest RSA key accepted, and the only public exponent: bounds the cost of checking a CSR's signature. */
const RSA_MAX_BITS = 4096;
const RSA_EXPONENT = 65537;
/** A 4096-bit RSA public key is about 530 bytes: anything much larger is refused before its signature is checked. */
const KEY_MAX_BYTES = 1024;

/** How many CSR signatures this process checked (the costly step of a CSR; tests read it to see what was skipped). */
export const csrStats = { signatureChecks: 0 };

/** The CSR's DER from its PEM block, refused (400) unless it is exactly one DER structure with nothing after it. */
function csrDer(pem: string): Buffer {
  if (typeof pem !== 'string' || !isCsrPem(pem)) throw refusal('EH_CSR_INVALID', 'CSR must be a PEM block "-----BEGIN CERTIFICATE REQUEST-----"');
  const der = pemToDer(pem, ['CERTIFICATE REQUEST', 'NEW CERTIFICATE REQUEST']);
  if (!der) throw refusal('EH_CSR_INVALID', 'CSR PEM is not valid base64 between its BEGIN and END lines');
  try {
    assertDer(der);
  } catch (err) {
    throw refusal('EH_CSR_INVALID', `CSR is not a DER-encoded PKCS#10 certification request (${(err as Error).message})`);
  }
  return der;
}

const invalid = (reason: string) => refusal('EH_CSR_INVALID', `CSR is not a valid PKCS#10 certification request (${reason})`);

/** A CSR as pkijs read it, with the ASN.1 tree asn1js parsed it into (the elements as they were, the skipped ones too). */
interface ReadCsr {
  request: CertificationRequest;
  /** The outer SEQUENCE: certificationRequestInfo, signatureAlgorithm, signature. */
  tree: asn1js.Sequence;
}

/** The children of a constructed element asn1js parsed. */
const children = (block: unknown): asn1js.AsnType[] => (block instanceof asn1js.Constructed ? block.valueBlock.value : []);

/**
 * The CSR of a PEM block, parsed by pkijs against the PKCS#10 schema (every field of the right type, nothing
 * missing) after the strict DER check. The tree is parsed by asn1js and handed to pkijs (what pkijs's own `fromBER`
 * does), so the elements the schema skipped can be counted afterwards.
 */
function schemaParse(der: Buffer): ReadCsr {
  const asn1 = asn1js.fromBER(new Uint8Array(der.buffer, der.byteOffset, der.byteLength));
  if (asn1.offset === -1 || !(asn1.result instanceof asn1js.Sequence)) throw invalid(asn1.result.error || 'not an ASN.1 SEQUENCE');
  try {
    return { request: new CertificationRequest({ schema: asn1.result }), tree: asn1.result };
  } catch (err) {
    throw invalid((err as Error).message);
  }
}

/**
 * The request of a PEM CSR the web process checked with parseCsr, parsed again (the agents' enrollment jobs carry
 * the CSR itself).
 */
export const readCsr = (pem: string) => schemaParse(csrDer(pem)).request;

/** An AlgorithmIdentifier as parsed: the algorithm and at most its parameters (RFC 5280 4.1.1.2). */
const isAlgorithmIdentifier = (block: asn1js.AsnType | undefined) => {
  const n = children(block).length;
  return n === 1 || n === 2;
};

/**
 * readCsr's schema parse, then what the schema does not check: version 1, no element it skipped, BIT STRINGs of whole
 * bytes. asn1js parses every element and pkijs's schema match ignores those after the ones it names (fields after the
 * signature, an AlgorithmIdentifier with more than an algorithm and its parameters, ...): counted in the tree, where
 * a re-encoding of the whole request used to find them at three times the cost.
 */
function checkedCsr(pem: string): ReadCsr {
  const der = csrDer(pem);
  const read = schemaParse(der);
  const { request, tree } = read;
  if (request.version !== 0) throw refusal('EH_CSR_INVALID', `CSR version must be 1 (encoded 0), got ${request.version}`);
  const [info, signatureAlgorithm] = children(tree);
  const [, subject, spki, attributes] = children(info);
  // every AttributeTypeAndValue of the subject a type and a value, nothing more (the Name is certified as it is)
  const nameSkipped = children(subject).some((rdn) => children(rdn).some((atv) => children(atv).length !== 2));
  const skipped =
    nameSkipped ||
    children(tree).length !== 3 ||
    !isAlgorithmIdentifier(signatureAlgorithm) ||
    children(info).length > 4 ||
    (attributes !== undefined && !((attributes as asn1js.BaseBlock).idBlock.tagClass === 3 && (attributes as asn1js.BaseBlock).idBlock.tagNumber === 0)) ||
    children(spki).length !== 2 ||
    !isAlgorithmIdentifier(children(spki)[0]);
  if (skipped) throw invalid('it has elements the PKCS#10 schema does not have');
  if (request.signatureValue.valueBlock.unusedBits !== 0) throw invalid('signature BIT STRING with unused bits');
  if (request.subjectPublicKeyInfo.subjectPublicKey.valueBlock.unusedBits !== 0) throw invalid('subjectPublicKey BIT STRING with unused bits');
  return read;
}

/** The bit length of an unsigned big-endian integer's bytes. */
function bitLength(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  return i === bytes.length ? 0 : (bytes.length - i - 1) * 8 + (32 - Math.clz32(bytes[i]));
}

/** The CSR's public key checked against what we accept (before its signature is checked): its type, as `ec` or `rsa`. */
function keyPolicy(request: CertificationRequest): { description: string; type: 'ec' | 'rsa'; jwk?: JsonWebKey } {
  const info = request.subjectPublicKeyInfo;
  const algorithm = info.algorithm.algorithmId;
  const bits = info.subjectPublicKey.valueBlock.valueHexView;
  if (bits.byteLength > KEY_MAX_BYTES) throw refusal('EH_CSR_INVALID', `CSR public key is too large (${bits.byteLength} bytes); ${ACCEPTED}`);
  if (algorithm === EC_PUBLIC_KEY) {
    const parameters: unknown = info.algorithm.algorithmParams;
    const curveOid = parameters instanceof asn1js.ObjectIdentifier ? parameters.getValue() : 'unknown';
    const curve = EC_CURVES[curveOid];
    if (!curve) throw refusal('EH_CSR_INVALID', `CSR public key is on EC curve ${CURVE_NAMES[curveOid] ?? curveOid}; ${ACCEPTED}`);
    if (bits.byteLength !== 1 + 2 * curve.coordinateBytes || bits[0] !== 0x04)
      throw refusal('EH_CSR_INVALID', 'CSR public key is not an uncompressed EC point');
    const point = Buffer.from(bits.buffer, bits.byteOffset, bits.byteLength);
    const [x, y] = [point.subarray(1, 1 + curve.coordinateBytes), point.subarray(1 + curve.coordinateBytes)].map((c) => c.toString('base64url'));
    return { description: `EC ${curve.name}`, type: 'ec', jwk: { kty: 'EC', crv: curve.name, x, y } };
  }
  if (algorithm === RSA_ENCRYPTION) {
    let key: RSAPublicKey;
    try {
      key = RSAPublicKey.fromBER(bits.slice());
    } catch {
      throw refusal('EH_CSR_INVALID', 'CSR public key could not be read');
    }
    const size = bitLength(key.modulus.valueBlock.valueHexView);
    if (size < 2048) throw refusal('EH_CSR_INVALID', `CSR public key is RSA ${size} bits; at least 2048 bits are required`);
    if (size > RSA_MAX_BITS) throw refusal('EH_CSR_INVALID', `CSR public key is RSA ${size} bits; at most ${RSA_MAX_BITS} bits are accepted`);
    const exponent = key.publicExponent.valueBlock.valueHexView;
    if (bitLength(exponent) > 32 || key.publicExponent.valueBlock.valueDec !== RSA_EXPONENT) {
      throw refusal(
        'EH_CSR_INVALID',
        `CSR public key has RSA public exponent ${BigInt(`0x${Buffer.from(exponent).toString('hex') || '0'}`)}; only 65537 is accepted`,
      );
    }
    return { description: `RSA ${size}`, type: 'rsa' };
  }
  throw refusal('EH_CSR_INVALID', `CSR public key type ${KEY_TYPE_NAMES[algorithm] ?? algorithm} is not accepted; ${ACCEPTED}`);
}

const CURVE_NAMES: Record<string, string> = { '1.3.132.0.35': 'P-521 (secp521r1)', '1.3.132.0.10': 'secp256k1' };
const KEY_TYPE_NAMES: Record<string, string> = {
  '1.3.101.112': 'Ed25519',
  '1.3.101.113': 'Ed448',
  '1.2.840.113549.1.1.10': 'RSASSA-PSS',
  '1.2.840.10040.4.1': 'DSA',
};

/**
 * The CSR's self-signature checked with node:crypto over the bytes pkijs kept (the CertificationRequestInfo as it was
 * signed): the key from its SubjectPublicKeyInfo, the signature as the BIT STRING carries it (DER ECDSA-Sig-Value or
 * an RSA PKCS#1 v1.5 block). The same check as pkijs's `verify`, without its WebCrypto key import and signature
 * re-encoding (a third of the web process's CPU per enrollment). Throws when the key or the signature cannot be read.
 * An EC key is imported from its coordinates (a JWK), which OpenSSL 3 does in two thirds of the time of the
 * SubjectPublicKeyInfo decoder, and checks the same way (a point off its curve is refused).
 */
function signatureVerifies(request: CertificationRequest, hash: string, spkiDer: Buffer, jwk: JsonWebKey | undefined): boolean {
  const key = jwk ? createPublicKey({ key: jwk, format: 'jwk' }) : createPublicKey({ key: spkiDer, format: 'der', type: 'spki' });
  const signature = request.signatureValue.valueBlock.valueHexView;
  return verify(hash, request.tbsView, { key, dsaEncoding: 'der' }, signature);
}

/**
 * Parses a PEM CSR and verifies its self-signature (proof that the requester holds the private key). Every refusal
 * is a 400 that says why.
 */
export async function parseCsr(pem: string): Promise<ParsedCsr> {
  const { request, tree } = checkedCsr(pem);
  const { description, type, jwk } = keyPolicy(request);
  const signatureAlgorithm = request.signatureAlgorithm.algorithmId;
  const algorithm = SIGNATURE_ALGORITHMS[signatureAlgorithm];
  if (!algorithm) throw refusal('EH_CSR_INVALID', `CSR signature algorithm ${signatureAlgorithm} is not accepted; use SHA-256/384/512 with RSA or ECDSA`);
  if (algorithm.keyType !== type) throw refusal('EH_CSR_INVALID', 'CSR signature algorithm does not match its public key type');
  let subject: NameEntries;
  try {
    subject = nameEntries(request.subject);
  } catch (err) {
    throw refusal('EH_CSR_INVALID', `CSR subject could not be read (${(err as Error).message})`);
  }
  csrStats.signatureChecks++;
  // the key and the name as the requester encoded them and signed them (strict DER, every element accounted for by
  // checkedCsr): what the certificate will carry
  const [, subjectElement, spkiElement] = children(children(tree)[0]) as asn1js.BaseBlock[];
  const spkiDer = Buffer.from(spkiElement.valueBeforeDecodeView);
  const subjectDer = Buffer.from(subjectElement.valueBeforeDecodeView);
  let verified: boolean;
  try {
    verified = signatureVerifies(request, algorithm.hash, spkiDer, jwk);
  } catch (err) {
    // the key is malformed (an EC point off its curve): node:crypto refused to import it
    throw refusal('EH_CSR_INVALID', `CSR signature could not be checked: ${(err as Error).message}`);
  }
  if (!verified) throw refusal('EH_CSR_INVALID', 'CSR signature does not verify: it was not signed by the key it carries');
  return { request, subject, subjectText: nameToString(subject), fields: subjectFields(subject), spkiDer, subjectDer, keyDescription: description };
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
