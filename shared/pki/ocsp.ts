import { createHash, sign, type KeyObject } from 'node:crypto';
import { assertDer, readElement, type DerElement } from './der.js';
import { tlv } from './certificates.js';

/**
 * OCSP (RFC 6960) on the wire: a strict reader of requests and a writer of signed responses. Requests are read from
 * their DER by hand (one walk, no schema objects: the responder's hot path) after the strict DER check, so anything
 * that is not exactly an OCSPRequest (garbage, truncated, trailing bytes, BER) is refused; responses are written as
 * DER and signed with node:crypto (ECDSA P-256, SHA-256) by a delegated responder.
 */

/** The responder's answers that carry no response (OCSPResponseStatus). */
export const OCSP_STATUS = { malformedRequest: 1, internalError: 2, tryLater: 3, unauthorized: 6 } as const;

/** Most certificates one request may ask about. */
const MAX_SINGLE_REQUESTS = 16;
/** Longest nonce accepted (RFC 8954 asks for 1 to 32 octets; some clients send more). */
const MAX_NONCE = 128;

/** One CertID of a request: its DER (echoed in the answer), hash algorithm, issuer hashes and serial (hex). */
export interface CertId {
  raw: Buffer;
  hash: HashName | undefined;
  issuerNameHash: Buffer;
  issuerKeyHash: Buffer;
  serialNumber: string;
}

interface OcspRequest {
  certIds: CertId[];
  /** The request's nonce extension, whole (echoed as it is). */
  nonce?: Buffer;
}

type HashName = 'sha1' | 'sha256' | 'sha384' | 'sha512';

/** OBJECT IDENTIFIER contents, hex. */
const HASHES: Record<string, HashName> = {
  '2b0e03021a': 'sha1',
  '608648016503040201': 'sha256',
  '608648016503040202': 'sha384',
  '608648016503040203': 'sha512',
};
const NONCE_OID = '2b0601050507300102';
const BASIC_OID = Buffer.from('06092b0601050507300101', 'hex');
const ECDSA_WITH_SHA256 = Buffer.from('300a06082a8648ce3d040302', 'hex');

export class MalformedOcspRequest extends Error {}

const malformed = (why: string) => new MalformedOcspRequest(why);

/** The elements of a constructed element's content, in order. */
function children(content: Buffer): DerElement[] {
  const out: DerElement[] = [];
  for (let offset = 0; offset < content.length; ) {
    const e = readElement(content, offset);
    out.push(e);
    offset += e.raw.length;
  }
  return out;
}

function expect(e: DerElement | undefined, tag: number, what: string): DerElement {
  if (!e || e.tag !== tag) throw malformed(`${what} expected`);
  return e;
}

function readCertId(e: DerElement): CertId {
  const [alg, nameHash, keyHash, serial, ...rest] = children(expect(e, 0x30, 'CertID').content);
  if (rest.length) throw malformed('CertID has extra elements');
  const [algOid, ...params] = children(expect(alg, 0x30, 'hashAlgorithm').content);
  if (params.length > 1 || (params.length === 1 && params[0].tag !== 0x05)) throw malformed('hashAlgorithm parameters');
  const hash = HASHES[expect(algOid, 0x06, 'hash algorithm OID').content.toString('hex')];
  return {
    raw: e.raw,
    hash,
    issuerNameHash: expect(nameHash, 0x04, 'issuerNameHash').content,
    issuerKeyHash: expect(keyHash, 0x04, 'issuerKeyHash').content,
    serialNumber: expect(serial, 0x02, 'serialNumber').content.toString('hex'),
  };
}

/** The nonce extension among the request's extensions ([2] EXPLICIT Extensions), checked. */
function readNonce(e: DerElement): Buffer | undefined {
  let nonce: Buffer | undefined;
  for (const ext of children(expect(children(e.content)[0], 0x30, 'Extensions').content)) {
    const [id, ...rest] = children(expect(ext, 0x30, 'Extension').content);
    if (expect(id, 0x06, 'extnID').content.toString('hex') !== NONCE_OID) continue;
    const value = rest[rest.length - 1];
    if (!value || value.tag !== 0x04 || value.content.length === 0 || value.content.length > MAX_NONCE + 4) throw malformed('nonce');
    nonce = ext.raw;
  }
  return nonce;
}

/** Reads an OCSPRequest's DER; throws MalformedOcspRequest for anything else. */
export function parseOcspRequest(der: Buffer): OcspRequest {
  try {
    assertDer(der);
  } catch (err) {
    throw malformed((err as Error).message);
  }
  try {
    const [tbs, signature, ...rest] = children(expect(readElement(der), 0x30, 'OCSPRequest').content);
    if (rest.length || (signature && signature.tag !== 0xa0)) throw malformed('OCSPRequest has extra elements');
    const parts = children(expect(tbs, 0x30, 'TBSRequest').content);
    let i = 0;
    if (parts[i]?.tag === 0xa0) {
      const version = children(parts[i++].content);
      if (version.length !== 1 || version[0].tag !== 0x02 || version[0].content.toString('hex') !== '00') throw malformed('version must be v1');
    }
    if (parts[i]?.tag === 0xa1) i++;
    const list = children(expect(parts[i++], 0x30, 'requestList').content);
    let nonce: Buffer | undefined;
    if (parts[i]?.tag === 0xa2) nonce = readNonce(parts[i++]);
    if (i !== parts.length) throw malformed('TBSRequest has extra elements');
    if (list.length === 0 || list.length > MAX_SINGLE_REQUESTS) throw malformed(`a request asks about 1 to ${MAX_SINGLE_REQUESTS} certificates`);
    const certIds = list.map((request) => {
      const [certId, extensions, ...more] = children(expect(request, 0x30, 'Request').content);
      if (more.length || (extensions && extensions.tag !== 0xa0)) throw malformed('Request has extra elements');
      return readCertId(certId);
    });
    return { certIds, nonce };
  } catch (err) {
    if (err instanceof MalformedOcspRequest) throw err;
    throw malformed((err as Error).message);
  }
}

/** An OCSPResponse without responseBytes: the status alone. */
export const ocspError = (status: (typeof OCSP_STATUS)[keyof typeof OCSP_STATUS]): Buffer => Buffer.of(0x30, 0x03, 0x0a, 0x01, status);

/** GeneralizedTime, whole seconds (RFC 5280 4.1.2.5.2). */
function generalizedTime(date: Date): Buffer {
  const text = date
    .toISOString()
    .replace(/[-:T]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return tlv(0x18, Buffer.from(text, 'ascii'));
}

export type CertStatus = { kind: 'good' } | { kind: 'unknown' } | { kind: 'revoked'; revokedAt: Date; reasonCode: number };

interface SingleAnswer {
  certId: Buffer;
  status: CertStatus;
  thisUpdate: Date;
  nextUpdate: Date;
}

/** A delegated responder: its certificate (sent with every answer), key and key hash (ResponderID byKey). */
export interface Responder {
  certificateDer: Buffer;
  privateKey: KeyObject;
  keyHash: Buffer;
}

function certStatus(s: CertStatus): Buffer {
  if (s.kind === 'good') return Buffer.of(0x80, 0x00);
  if (s.kind === 'unknown') return Buffer.of(0x82, 0x00);
  const reason = s.reasonCode === 0 ? [] : [tlv(0xa0, tlv(0x0a, Buffer.of(s.reasonCode)))];
  return tlv(0xa1, generalizedTime(s.revokedAt), ...reason);
}

/** A signed successful OCSPResponse (BasicOCSPResponse) answering each CertID, echoing the nonce extension if any. */
export function buildOcspResponse(responder: Responder, answers: SingleAnswer[], producedAt: Date, nonce?: Buffer): Buffer {
  const singles = answers.map((a) => tlv(0x30, a.certId, certStatus(a.status), generalizedTime(a.thisUpdate), tlv(0xa0, generalizedTime(a.nextUpdate))));
  const tbs = tlv(
    0x30,
    tlv(0xa2, tlv(0x04, responder.keyHash)),
    generalizedTime(producedAt),
    tlv(0x30, ...singles),
    ...(nonce ? [tlv(0xa1, tlv(0x30, nonce))] : []),
  );
  const signature = sign('sha256', tbs, responder.privateKey);
  const basic = tlv(0x30, tbs, ECDSA_WITH_SHA256, tlv(0x03, Buffer.of(0), signature), tlv(0xa0, tlv(0x30, responder.certificateDer)));
  return tlv(0x30, Buffer.of(0x0a, 0x01, 0x00), tlv(0xa0, tlv(0x30, BASIC_OID, tlv(0x04, basic))));
}

/** What a CertID must carry for an issuer, by hash algorithm: the hashes of its Name's DER and of its key's bits. */
export interface IssuerHashes {
  nameDer: Buffer;
  keyBits: Buffer;
  /** The two hashes by algorithm, computed once each. */
  memo?: Map<HashName, [Buffer, Buffer]>;
}

export function certIdMatches(id: CertId, issuer: IssuerHashes): boolean {
  if (!id.hash) return false;
  issuer.memo ??= new Map();
  let hashes = issuer.memo.get(id.hash);
  if (!hashes) {
    hashes = [createHash(id.hash).update(issuer.nameDer).digest(), createHash(id.hash).update(issuer.keyBits).digest()];
    issuer.memo.set(id.hash, hashes);
  }
  return hashes[0].equals(id.issuerNameHash) && hashes[1].equals(id.issuerKeyHash);
}
