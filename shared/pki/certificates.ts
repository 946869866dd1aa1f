import { createHash, createPublicKey, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import {
  AlgorithmIdentifier,
  AuthorityKeyIdentifier,
  BasicConstraints,
  Certificate,
  Extension,
  ExtKeyUsage,
  PublicKeyInfo,
  RelativeDistinguishedNames,
  Time,
  TimeType,
} from 'pkijs';
import { refusal } from '../errors.js';
import { assertDer, derToPem, pemToDer, readElement } from './der.js';

/**
 * Certificates built from pkijs's X.509 schema, in the exact profile the API documents for generated certificates, and signed with node:crypto
 * (ECDSA P-256 with SHA-256, DER signature as X.509 carries it). The subject and key come from a CSR pkijs parsed:
 * their encodings are the requester's, byte for byte (pkijs keeps a parsed Name's bytes and re-encodes a strict-DER
 * key to the same bytes).
 */

const OID = {
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  ocspSigning: '1.3.6.1.5.5.7.3.9',
  crlDistributionPoints: '2.5.29.31',
  authorityInfoAccess: '1.3.6.1.5.5.7.1.1',
  accessOcsp: '1.3.6.1.5.5.7.48.1',
  accessCaIssuers: '1.3.6.1.5.5.7.48.2',
  ocspNoCheck: '1.3.6.1.5.5.7.48.1.5',
};

/** The key and name a certificate is signed with (an EC P-256 CA key). */
export interface Signer {
  /** The CA's subject Name as parsed from its certificate (its bytes, the issuer of what it signs, are kept). */
  name: RelativeDistinguishedNames;
  /** The CA's private key (EC P-256). */
  privateKey: KeyObject;
  keyIdentifier: Buffer;
}

type Profile =
  /** A generated client certificate: EKU serverAuth; KU digitalSignature, keyCertSign, cRLSign only. */
  | { kind: 'client' }
  | { kind: 'ca'; pathLength?: number }
  /** A delegated OCSP responder (RFC 6960 4.2.2.2): KU digitalSignature (critical), EKU OCSPSigning, id-pkix-ocsp-nocheck. */
  | { kind: 'ocsp' };

/**
 * Where a relying party checks the certificate's revocation: CRL Distribution Points (`crl`) and Authority
 * Information Access (`ocsp`, `caIssuers`), each a URL.
 */
export interface RevocationUrls {
  crl: string;
  ocsp?: string;
  caIssuers?: string;
}

interface IssueRequest {
  /** The subject: a Name pkijs parsed or built, or a Name's DER. Either way its bytes are certified as they are. */
  subject: RelativeDistinguishedNames | Uint8Array;
  /** The key: a PublicKeyInfo, or a SubjectPublicKeyInfo's DER (certified as it is, not encoded again). */
  publicKey: PublicKeyInfo | Uint8Array;
  issuer: Signer;
  notBefore: Date;
  notAfter: Date;
  profile: Profile;
  /** CRL Distribution Points and Authority Information Access, when given. */
  revocation?: RevocationUrls;
}

export interface Issued {
  der: Buffer;
  serialNumber: string;
  fingerprintSha256: string;
}

/**
 * The subjectPublicKey bits of a SubjectPublicKeyInfo's DER (SEQUENCE { AlgorithmIdentifier, BIT STRING }), read from
 * the two elements' headers (partsToCertify checks the whole as strict DER first). Throws unless it has that shape
 * with whole bytes of key.
 */
function subjectPublicKeyBits(spkiDer: Uint8Array): Buffer {
  const spki = readElement(Buffer.from(spkiDer.buffer, spkiDer.byteOffset, spkiDer.byteLength));
  if (spki.tag !== 0x30) throw new Error('a SubjectPublicKeyInfo is a SEQUENCE');
  const algorithm = readElement(spki.content);
  const bits = algorithm.raw.length < spki.content.length ? readElement(spki.content, algorithm.raw.length) : undefined;
  if (algorithm.tag !== 0x30 || bits?.tag !== 0x03 || algorithm.raw.length + bits.raw.length !== spki.content.length) {
    throw new Error('a SubjectPublicKeyInfo is an AlgorithmIdentifier and a BIT STRING');
  }
  if (bits.content[0] !== 0) throw new Error('subjectPublicKey BIT STRING with unused bits');
  return bits.content.subarray(1);
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(publicKey: PublicKeyInfo | Uint8Array): Buffer {
  const bits = publicKey instanceof Uint8Array ? subjectPublicKeyBits(publicKey) : publicKey.subjectPublicKey.valueBlock.valueHexView;
  return createHash('sha1').update(bits).digest();
}

/** A public key from its SubjectPublicKeyInfo DER (what node:crypto exports). */
export const publicKeyInfo = (spkiDer: Buffer) => PublicKeyInfo.fromBER(new Uint8Array(spkiDer));

/**
 * The subject Name and SubjectPublicKeyInfo of a CSR the web process verified, from their DER, as issueCertificate
 * takes them: certified as they were encoded and signed, so not parsed into objects again (a fresh worker would run
 * that ASN.1 code in V8's slow tiers for every issuance). What is checked: both are strict DER, the Name a SEQUENCE
 * (of RDNs) and the key a SEQUENCE of an AlgorithmIdentifier and a BIT STRING. Throws when either is not.
 */
export function partsToCertify(subjectDer: Buffer, spkiDer: Buffer): { subject: Uint8Array; publicKey: Uint8Array } {
  assertDer(subjectDer);
  if (subjectDer[0] !== 0x30) throw new Error('a Name is a SEQUENCE');
  assertDer(spkiDer);
  subjectPublicKeyBits(spkiDer);
  return { subject: subjectDer, publicKey: spkiDer };
}

/** 16 random bytes, positive and minimally encoded: 126 bits of randomness. */
function randomSerial(): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x3f) | 0x40;
  return serial;
}

/**
 * KeyUsage is a named BIT STRING: digitalSignature (bit 0), keyCertSign (bit 5), cRLSign (bit 6), with DER's
 * trailing zero bits dropped (one unused bit). The profile: those three enabled, every other usage disabled; CAs the same.
 */
const KEY_USAGE = new asn1js.BitString({ valueHex: Uint8Array.of(0b1000_0110), unusedBits: 1 });

const extension = (extnID: string, critical: boolean, value: { toBER(): ArrayBuffer }) => new Extension({ extnID, critical, extnValue: value.toBER() });

/**
 * An element already DER-encoded, written as it is inside the elements asn1js encodes around it. asn1js's RawData
 * returns its bytes but does not write them into the writer of the element it sits in (asn1js 4.0.0), which would
 * leave them out.
 */
export class Encoded extends asn1js.RawData {
  override toBER(sizeOnly?: boolean, writer?: asn1js.ViewWriter): ArrayBuffer {
    const der = super.toBER(sizeOnly);
    writer?.write(der);
    return der;
  }
}

/**
 * A pkijs object whose schema is its DER as it is. Certificate.encodeTBS asks each part for its schema: a parsed
 * Name answers by parsing its kept bytes again (every issuance, the issuer's and the subject's), a key and an
 * extension by building their elements again; a fresh process runs all of that in V8's slow tiers.
 */
function asEncoded<T extends { toSchema(): unknown }>(object: T, der: Uint8Array | ArrayBuffer): T {
  const encoded = new Encoded({ data: der });
  object.toSchema = () => encoded;
  return object;
}

/** A pkijs object encoded now, once: its schema is those bytes from then on. */
const encodedOnce = <T extends { toSchema(): { toBER(): ArrayBuffer } }>(object: T): T => asEncoded(object, object.toSchema().toBER());

/** The extensions every client certificate has, encoded once: keyUsage and extKeyUsage serverAuth. */
const KU_EXTENSION = encodedOnce(extension(OID.keyUsage, true, KEY_USAGE));
const EKU_EXTENSION = encodedOnce(extension(OID.extKeyUsage, false, new ExtKeyUsage({ keyPurposes: [OID.serverAuth] }).toSchema()));

/** A delegated OCSP responder's: digitalSignature only, OCSPSigning, and no-check (its value is NULL). */
const OCSP_KU_EXTENSION = encodedOnce(extension(OID.keyUsage, true, new asn1js.BitString({ valueHex: Uint8Array.of(0b1000_0000), unusedBits: 7 })));
const OCSP_EKU_EXTENSION = encodedOnce(extension(OID.extKeyUsage, false, new ExtKeyUsage({ keyPurposes: [OID.ocspSigning] }).toSchema()));
const OCSP_NOCHECK_EXTENSION = encodedOnce(extension(OID.ocspNoCheck, false, new asn1js.Null()));

/** A DER element from its tag and content (short and long definite lengths). */
export function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const header =
    n < 0x80 ? [tag, n] : n < 0x100 ? [tag, 0x81, n] : n < 0x10000 ? [tag, 0x82, n >> 8, n & 0xff] : [tag, 0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from(header), body]);
}

/** A GeneralName uniformResourceIdentifier ([6] IA5String). */
const uri = (url: string) => tlv(0x86, Buffer.from(url, 'ascii'));
const oid = (dotted: string) => Buffer.from(new asn1js.ObjectIdentifier({ value: dotted }).toBER());

/** CRL Distribution Points (one, by full name) and Authority Information Access (OCSP, CA issuers), as extensions. */
function revocationExtensions(urls: RevocationUrls): Extension[] {
  const dp = tlv(0x30, tlv(0x30, tlv(0xa0, tlv(0xa0, uri(urls.crl)))));
  const out = [encodedOnce(new Extension({ extnID: OID.crlDistributionPoints, critical: false, extnValue: new Uint8Array(dp).buffer }))];
  const access: Buffer[] = [];
  if (urls.ocsp) access.push(tlv(0x30, oid(OID.accessOcsp), uri(urls.ocsp)));
  if (urls.caIssuers) access.push(tlv(0x30, oid(OID.accessCaIssuers), uri(urls.caIssuers)));
  if (access.length)
    out.push(encodedOnce(new Extension({ extnID: OID.authorityInfoAccess, critical: false, extnValue: new Uint8Array(tlv(0x30, ...access)).buffer })));
  return out;
}

/** What a signer puts in every certificate it signs, encoded once per signer: its name and authorityKeyIdentifier. */
const signerParts = new WeakMap<Signer, { issuer: RelativeDistinguishedNames; aki: Extension; revocation?: { key: string; extensions: Extension[] } }>();
function partsOf(signer: Signer) {
  let parts = signerParts.get(signer);
  if (!parts) {
    const aki = extension(
      OID.authorityKeyIdentifier,
      false,
      new AuthorityKeyIdentifier({ keyIdentifier: new asn1js.OctetString({ valueHex: new Uint8Array(signer.keyIdentifier) }) }).toSchema(),
    );
    parts = { issuer: encodedName(signer.name), aki: encodedOnce(aki) };
    signerParts.set(signer, parts);
  }
  return parts;
}

/** A Name's DER, or a parsed Name as its bytes (pkijs keeps them); a Name built from its fields is encoded once. */
const encodedName = (name: RelativeDistinguishedNames | Uint8Array) =>
  asEncoded(
    new RelativeDistinguishedNames(),
    name instanceof Uint8Array ? name : name.valueBeforeDecode.byteLength ? name.valueBeforeDecode : name.toSchema().toBER(),
  );

/** The revocation extensions of what a signer signs, encoded once per signer and set of URLs. */
function revocationOf(signer: Signer, urls: RevocationUrls | undefined): Extension[] {
  if (!urls) return [];
  const parts = partsOf(signer);
  const key = `${urls.crl} ${urls.ocsp ?? ''} ${urls.caIssuers ?? ''}`;
  if (parts.revocation?.key !== key) parts.revocation = { key, extensions: revocationExtensions(urls) };
  return parts.revocation.extensions;
}

function extensions(req: IssueRequest): Extension[] {
  const ski = extension(OID.subjectKeyIdentifier, false, new asn1js.OctetString({ valueHex: new Uint8Array(keyIdentifier(req.publicKey)) }));
  const { aki } = partsOf(req.issuer);
  const revocation = revocationOf(req.issuer, req.revocation);
  if (req.profile.kind === 'client') return [KU_EXTENSION, EKU_EXTENSION, ski, aki, ...revocation];
  if (req.profile.kind === 'ocsp') return [OCSP_KU_EXTENSION, OCSP_EKU_EXTENSION, OCSP_NOCHECK_EXTENSION, ski, aki, ...revocation];
  const pathLength = req.profile.pathLength;
  const constraints = new BasicConstraints(pathLength === undefined ? { cA: true } : { cA: true, pathLenConstraint: pathLength });
  return [extension(OID.basicConstraints, true, constraints.toSchema()), KU_EXTENSION, ski, aki, ...revocation];
}

/** The authorityKeyIdentifier extension of what this signer signs (certificates and CRLs), encoded once. */
export const authorityKeyIdentifierOf = (signer: Signer): Extension => partsOf(signer).aki;

/** The signer's name as the issuer of what it signs (its bytes as they are). */
export const issuerNameOf = (signer: Signer): RelativeDistinguishedNames => partsOf(signer).issuer;

/** X.509 Time: UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5), whole seconds. */
export function time(date: Date): Time {
  const value = new Date(Math.floor(date.getTime() / 1000) * 1000);
  return new Time({ type: value.getUTCFullYear() < 2050 ? TimeType.UTCTime : TimeType.GeneralizedTime, value });
}

/** ecdsa-with-SHA256 without parameters (RFC 5758 3.2), encoded once: the same in the TBS (signature) and around it. */
export const ECDSA_WITH_SHA256 = encodedOnce(new AlgorithmIdentifier({ algorithmId: '1.2.840.10045.4.3.2' }));

/**
 * A version 3 certificate from the schema, signed by the issuer (ECDSA P-256, SHA-256). The TBSCertificate is encoded
 * once and its schema object embedded as it is (pkijs's own `sign` + `toSchema` encode it twice or parse it back, and
 * sign through WebCrypto, whose raw signature it then converts to DER): the same bytes, a third of the ASN.1 work.
 */
export async function issueCertificate(req: IssueRequest): Promise<Issued> {
  const serial = randomSerial();
  const certificate = new Certificate({
    version: 2,
    serialNumber: new asn1js.Integer({ valueHex: new Uint8Array(serial) }),
    issuer: partsOf(req.issuer).issuer,
    subject: encodedName(req.subject),
    notBefore: time(req.notBefore),
    notAfter: time(req.notAfter),
    subjectPublicKeyInfo: req.publicKey instanceof Uint8Array ? asEncoded(new PublicKeyInfo(), req.publicKey) : req.publicKey,
    extensions: extensions(req),
  });
  certificate.signature = ECDSA_WITH_SHA256;
  certificate.signatureAlgorithm = ECDSA_WITH_SHA256;
  const tbs = Buffer.from(certificate.encodeTBS().toBER());
  const signature = sign('sha256', tbs, req.issuer.privateKey);
  // the TBSCertificate as it was signed, not encoded a second time
  const der = Buffer.from(
    new asn1js.Sequence({
      value: [
        new Encoded({ data: tbs }) as unknown as asn1js.BaseBlock,
        certificate.signatureAlgorithm.toSchema(),
        new asn1js.BitString({ valueHex: new Uint8Array(signature) }),
      ],
    }).toBER(),
  );
  return { der, serialNumber: serial.toString('hex'), fingerprintSha256: createHash('sha256').update(der).digest('hex') };
}

export const certificatePem = (der: Buffer) => derToPem(der, 'CERTIFICATE');

/**
 * Whether the certificate (PEM, the first of a chain) certifies the key of this SubjectPublicKeyInfo DER, compared in
 * canonical form (a requester's encoding may differ in bytes that say the same key).
 */
export function certifiesKey(certificatePem: string, spkiDer: Uint8Array): boolean {
  const canonical = (key: KeyObject) => key.export({ type: 'spki', format: 'der' });
  return canonical(new X509Certificate(certificatePem).publicKey).equals(
    canonical(createPublicKey({ key: Buffer.from(spkiDer), format: 'der', type: 'spki' })),
  );
}

/** What the service stores about a certificate. */
export interface CertificateInfo {
  pem: string;
  fingerprintSha256: string;
  subject: string;
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
}

function describeCertificate(cert: X509Certificate): CertificateInfo {
  return {
    pem: cert.toString(),
    fingerprintSha256: cert.fingerprint256.replaceAll(':', '').toLowerCase(),
    subject: cert.subject.split('\n').join(', '),
    serialNumber: cert.serialNumber.toLowerCase(),
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
  };
}

export const isCertificatePem = (pem: string) => /-----BEGIN CERTIFICATE-----/.test(pem);

/** An uploaded PEM certificate, parsed; garbage is a 400 that says so. */
export function parseUploadedCertificate(pem: string): CertificateInfo {
  const der = pemToDer(pem, ['CERTIFICATE']);
  if (!der) throw refusal('EH_CERTIFICATE_INVALID', 'certificate must be a PEM block "-----BEGIN CERTIFICATE-----"');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(der);
  } catch (err) {
    throw refusal('EH_CERTIFICATE_INVALID', `certificate could not be parsed: ${(err as Error).message}`);
  }
  return describeCertificate(cert);
}
