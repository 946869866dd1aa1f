import { createHash, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AlgorithmIdentifier,
  AuthorityKeyIdentifier,
  BasicConstraints,
  ExtendedKeyUsage,
  Extension,
  Extensions,
  id_ce_authorityKeyIdentifier,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectKeyIdentifier,
  id_kp_serverAuth,
  KeyIdentifier,
  KeyUsage,
  KeyUsageFlags,
  SubjectKeyIdentifier,
} from '@peculiar/asn1-x509';
import { badRequest } from '../errors.js';
import { children, derToPem, encodeBitString, encodeElement, encodeSequence, encodeTime, pemToDer, readElement } from './der.js';

const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const signatureAlgorithmDer = Buffer.from(AsnConvert.serialize(new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 })));

/** The key and name a certificate is signed with (an EC P-256 CA key). */
export interface Signer {
  /** DER of the CA's subject Name, exactly as in its certificate (the issuer of what it signs). */
  nameDer: Buffer;
  privateKey: KeyObject;
  keyIdentifier: Buffer;
}

export type Profile =
  /** SPEC.md's generated client certificate: EKU serverAuth; KU digitalSignature, keyCertSign, cRLSign only. */
  | { kind: 'client' }
  | { kind: 'ca'; pathLength?: number };

export interface IssueRequest {
  /** DER of the subject Name (for a CSR: copied byte for byte). */
  subjectDer: Buffer;
  spkiDer: Buffer;
  issuer: Signer;
  notBefore: Date;
  notAfter: Date;
  profile: Profile;
}

export interface Issued {
  der: Buffer;
  serialNumber: string;
  fingerprintSha256: string;
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(spkiDer: Buffer): Buffer {
  const [, bitString] = children(readElement(spkiDer));
  return createHash('sha1').update(bitString.content.subarray(1)).digest();
}

/** 16 random bytes, positive and minimally encoded: 126 bits of randomness. */
function randomSerial(): Buffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x3f) | 0x40;
  return serial;
}

const extensionDer = (extnID: string, critical: boolean, value: unknown) =>
  Buffer.from(AsnConvert.serialize(new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) })));

const CA_KEY_USAGE = new KeyUsage(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign);
/** SPEC.md: digital signature, key cert sign, CRL sign enabled; every other usage disabled. */
const CLIENT_KEY_USAGE = new KeyUsage(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign);

/** The extensions that depend only on the profile and the issuer, encoded once per signer. */
const fixedExtensions = new WeakMap<Signer, Map<string, Buffer[]>>();

function profileExtensions(issuer: Signer, profile: Profile): Buffer[] {
  const key = profile.kind === 'ca' ? `ca:${profile.pathLength ?? ''}` : 'client';
  let bySigner = fixedExtensions.get(issuer);
  if (!bySigner) fixedExtensions.set(issuer, (bySigner = new Map()));
  let fixed = bySigner.get(key);
  if (!fixed) {
    const aki = extensionDer(id_ce_authorityKeyIdentifier, false, new AuthorityKeyIdentifier({ keyIdentifier: new KeyIdentifier(issuer.keyIdentifier) }));
    fixed =
      profile.kind === 'ca'
        ? [extensionDer(id_ce_basicConstraints, true, new BasicConstraints({ cA: true, pathLenConstraint: profile.pathLength })), extensionDer(id_ce_keyUsage, true, CA_KEY_USAGE), aki]
        : [extensionDer(id_ce_keyUsage, true, CLIENT_KEY_USAGE), extensionDer(id_ce_extKeyUsage, false, new ExtendedKeyUsage([id_kp_serverAuth])), aki];
    bySigner.set(key, fixed);
  }
  return fixed;
}

/** The subject key identifier extension, the only per-certificate one: its schema encoding, split around the key id. */
const SKI_TEMPLATE = extensionDer(id_ce_subjectKeyIdentifier, false, new SubjectKeyIdentifier(Buffer.alloc(20, 0xee)));
const SKI_PREFIX = SKI_TEMPLATE.subarray(0, SKI_TEMPLATE.length - 20);
const subjectKeyIdentifierDer = (keyId: Buffer) => {
  if (keyId.length !== 20) throw new Error('key identifiers are SHA-1 digests');
  return Buffer.concat([SKI_PREFIX, keyId]);
};

const VERSION_3 = Buffer.from([0xa0, 0x03, 0x02, 0x01, 0x02]);

/**
 * Builds the TBSCertificate and signs it with node:crypto (ECDSA P-256, SHA-256). The subject and key are spliced in
 * as the requester encoded them; the extensions are encoded with the @peculiar/asn1-x509 schemas (the fixed ones once
 * per issuer), which keeps issuance to one signature and a few buffer copies.
 */
export function issueCertificate(req: IssueRequest): Issued {
  const serial = randomSerial();
  const [ku, ekuOrBc, aki] = profileExtensions(req.issuer, req.profile);
  const extensions = encodeSequence(ku, ekuOrBc, subjectKeyIdentifierDer(keyIdentifier(req.spkiDer)), aki);
  const tbs = encodeSequence(
    VERSION_3,
    encodeElement(0x02, serial),
    signatureAlgorithmDer,
    req.issuer.nameDer,
    encodeSequence(encodeTime(req.notBefore), encodeTime(req.notAfter)),
    req.subjectDer,
    req.spkiDer,
    encodeElement(0xa3, extensions),
  );
  const signature = sign('sha256', tbs, req.issuer.privateKey);
  const der = encodeSequence(tbs, signatureAlgorithmDer, encodeBitString(signature));
  return { der, serialNumber: serial.toString('hex'), fingerprintSha256: createHash('sha256').update(der).digest('hex') };
}

/** DER of the subject Name of a certificate, byte for byte. */
export function certificateSubjectDer(certificateDer: Buffer): Buffer {
  const [tbs] = children(readElement(certificateDer));
  const fields = children(tbs);
  const offset = fields[0].tag === 0xa0 ? 1 : 0;
  return fields[offset + 4].raw;
}

export const certificatePem = (der: Buffer) => derToPem(der, 'CERTIFICATE');

/** What the service stores about a certificate. */
export interface CertificateInfo {
  pem: string;
  fingerprintSha256: string;
  subject: string;
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
}

export function describeCertificate(cert: X509Certificate): CertificateInfo {
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
  if (!der) throw badRequest('certificate must be a PEM block "-----BEGIN CERTIFICATE-----"');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(der);
  } catch (err) {
    throw badRequest(`certificate could not be parsed: ${(err as Error).message}`);
  }
  return describeCertificate(cert);
}
