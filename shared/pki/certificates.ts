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
  Name,
  SubjectKeyIdentifier,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from '@peculiar/asn1-x509';
import { badRequest } from '../errors.js';
import { children, derToPem, encodeBitString, encodeSequence, pemToDer, readElement } from './der.js';

const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const signatureAlgorithmDer = Buffer.from(AsnConvert.serialize(new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 })));

/** The key and name a certificate is signed with (an EC P-256 CA key). */
export interface Signer {
  name: Name;
  privateKey: KeyObject;
  keyIdentifier: Buffer;
}

export type Profile =
  /** SPEC.md's generated client certificate: EKU serverAuth; KU digitalSignature, keyCertSign, cRLSign only. */
  | { kind: 'client' }
  | { kind: 'ca'; pathLength?: number };

export interface IssueRequest {
  subject: Name;
  spkiDer: Buffer;
  issuer: Signer;
  notBefore: Date;
  notAfter: Date;
  profile: Profile;
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(spkiDer: Buffer): Buffer {
  const [, bitString] = children(readElement(spkiDer));
  return createHash('sha1').update(bitString.content.subarray(1)).digest();
}

/** 16 random bytes, positive and minimally encoded: 126 bits of randomness. */
function randomSerial(): ArrayBuffer {
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x3f) | 0x40;
  return serial.buffer.slice(serial.byteOffset, serial.byteOffset + serial.length) as ArrayBuffer;
}

const extension = (extnID: string, critical: boolean, value: unknown) =>
  new Extension({ extnID, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });

function extensionsFor(req: IssueRequest, subjectKeyId: Buffer): Extensions {
  const list: Extension[] = [];
  if (req.profile.kind === 'ca') {
    list.push(extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: true, pathLenConstraint: req.profile.pathLength })));
    list.push(extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign)));
  } else {
    list.push(extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign)));
    list.push(extension(id_ce_extKeyUsage, false, new ExtendedKeyUsage([id_kp_serverAuth])));
  }
  list.push(extension(id_ce_subjectKeyIdentifier, false, new SubjectKeyIdentifier(subjectKeyId)));
  list.push(extension(id_ce_authorityKeyIdentifier, false, new AuthorityKeyIdentifier({ keyIdentifier: new KeyIdentifier(req.issuer.keyIdentifier) })));
  return new Extensions(list);
}

/** Builds the TBSCertificate with the ASN.1 schemas and signs it with node:crypto (ECDSA P-256, SHA-256). */
export function issueCertificate(req: IssueRequest): Buffer {
  const subjectKeyId = keyIdentifier(req.spkiDer);
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: randomSerial(),
    signature: new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 }),
    issuer: req.issuer.name,
    validity: new Validity({ notBefore: req.notBefore, notAfter: req.notAfter }),
    subject: req.subject,
    subjectPublicKeyInfo: AsnConvert.parse(req.spkiDer, SubjectPublicKeyInfo),
    extensions: extensionsFor(req, subjectKeyId),
  });
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
  const signature = sign('sha256', tbsDer, req.issuer.privateKey);
  return encodeSequence(tbsDer, signatureAlgorithmDer, encodeBitString(signature));
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
