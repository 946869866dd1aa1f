import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { Certificate } from 'pkijs';
import type { LRUCache } from 'lru-cache';
import { QueryTypes } from 'sequelize';
import { db } from '../../shared/db.js';
import { newId } from '../../shared/ids.js';
import { CertificateAuthority } from '../models/CertificateAuthority.js';
import { decryptSecret, encryptSecret } from '../../shared/secrets.js';
import { certificatePem, issueCertificate, keyIdentifier, publicKeyInfo, type Signer } from '../../shared/pki/certificates.js';
import { pemToDer } from '../../shared/pki/der.js';
import { cached, pkiCache } from '../../shared/pki/cache.js';
import { buildName, OID } from '../../shared/pki/names.js';
import { pkiUrls } from './revocations.js';

/**
 * The service's certificate authorities: one root (EC P-256, self-signed) and one issuing CA per hub signed by it.
 * Only the worker process calls this module: the web process never loads a CA private key.
 */

const YEAR_MS = 365.25 * 24 * 3600 * 1000;
const ROOT_VALIDITY_YEARS = 40;
const ISSUING_VALIDITY_YEARS = 30;
/** Backdating covers clock skew between us and verifiers. */
export const BACKDATE_MS = 5 * 60 * 1000;

/**
 * The validity of a leaf certificate issued now: from BACKDATE_MS ago to `years` calendar years from now, both on
 * whole seconds (what X.509 time holds, so the stored row and the certificate agree).
 */
export function leafValidity(years: number, now = Date.now()): { notBefore: Date; notAfter: Date } {
  const notAfter = new Date(Math.floor(now / 1000) * 1000);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + years);
  return { notBefore: new Date(Math.floor((now - BACKDATE_MS) / 1000) * 1000), notAfter };
}

/** The same for a validity of `ms` from now (an agent's: HUB_AGENT_CERT_VALIDITY). */
export function leafValidityFor(ms: number, now = Date.now()): { notBefore: Date; notAfter: Date } {
  return { notBefore: new Date(Math.floor((now - BACKDATE_MS) / 1000) * 1000), notAfter: new Date(Math.floor((now + ms) / 1000) * 1000) };
}

interface LoadedCa {
  id: string;
  /** The CA's public URLs (CRL, OCSP, its certificate) that the certificates it issues name. */
  urls: ReturnType<typeof pkiUrls>;
  signer: Signer;
  certificatePem: string;
  /** This CA's certificate and its issuers' (PEM), leaf-most first. */
  chainPem: string;
}

/** A CA private key (PKCS#8 PEM), EC P-256. */
async function signingKey(pkcs8Pem: string): Promise<KeyObject> {
  const key = createPrivateKey(pkcs8Pem);
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new Error('a CA key must be EC P-256');
  return key;
}

function newKey() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  return { pem, publicKey: publicKeyInfo(publicKey.export({ format: 'der', type: 'spki' })), sealed: encryptSecret(pem) };
}

/** A CA's signer: its name as parsed from its certificate and its decrypted key. */
export async function signerOf(ca: Pick<CertificateAuthority, 'certificatePem' | 'privateKeySealed'>): Promise<Signer> {
  const cert = Certificate.fromBER(new Uint8Array(pemToDer(ca.certificatePem, ['CERTIFICATE'])!));
  // the issuer name of what we sign must match this CA's subject byte for byte: pkijs keeps the parsed name's bytes
  return { name: cert.subject, privateKey: await signingKey(decryptSecret(ca.privateKeySealed)), keyIdentifier: keyIdentifier(cert.subjectPublicKeyInfo) };
}

/** Inserts unless a row for the same slot exists (a concurrent start won), then returns the slot's row. */
interface CaRow {
  id: string;
  kind: 'ROOT' | 'ISSUING';
  hubId: string | null;
  subject: string;
  certificatePem: string;
  privateKeySealed: string;
  notAfter: Date;
}

async function insertOnce(row: CaRow, find: () => Promise<CertificateAuthority | null>): Promise<CertificateAuthority> {
  await db().query(
    `INSERT INTO certificate_authorities (id, kind, hub_id, subject, certificate_pem, private_key_sealed, not_after)
     VALUES (:id, :kind, :hubId, :subject, :certificatePem, :privateKeySealed, :notAfter) ON CONFLICT DO NOTHING`,
    { replacements: { ...row }, type: QueryTypes.INSERT },
  );
  const found = await find();
  if (!found) throw new Error('certificate authority vanished after insert');
  return found;
}

let root: Promise<CertificateAuthority> | undefined;

/** The root CA, created on first use (race-safe across processes: one row wins, every process uses it). */
export function ensureRootCa(): Promise<CertificateAuthority> {
  root ??= (async () => {
    const existing = await CertificateAuthority.findOne({ where: { kind: 'ROOT' } });
    if (existing) return existing;
    const key = newKey();
    const name = buildName([
      [OID.organization, 'edgehub'],
      [OID.commonName, 'edgehub Root CA'],
    ]);
    const now = Date.now();
    const notAfter = new Date(now + ROOT_VALIDITY_YEARS * YEAR_MS);
    const { der } = await issueCertificate({
      subject: name,
      publicKey: key.publicKey,
      issuer: { name, privateKey: await signingKey(key.pem), keyIdentifier: keyIdentifier(key.publicKey) },
      notBefore: new Date(now - BACKDATE_MS),
      notAfter,
      profile: { kind: 'ca' },
    });
    return insertOnce(
      {
        id: newId(),
        kind: 'ROOT',
        hubId: null,
        subject: 'O=edgehub, CN=edgehub Root CA',
        certificatePem: certificatePem(der),
        privateKeySealed: key.sealed,
        notAfter,
      },
      () => CertificateAuthority.findOne({ where: { kind: 'ROOT' } }),
    );
  })().catch((err) => {
    root = undefined;
    throw err;
  });
  return root;
}

/** Decrypted issuing CAs by hub: bounded and expiring (HUB_PKI_CACHE_MAX, HUB_PKI_CACHE_TTL), created on first use. */
let hubCas: LRUCache<string, Promise<LoadedCa>> | undefined;

async function loadHubCa(hubId: string): Promise<LoadedCa> {
  const rootCa = await ensureRootCa();
  let issuing = await CertificateAuthority.findOne({ where: { kind: 'ISSUING', hubId } });
  if (!issuing) {
    const key = newKey();
    const subject = `O=edgehub, OU=hub ${hubId}, CN=edgehub Issuing CA`;
    const name = buildName([
      [OID.organization, 'edgehub'],
      [OID.organizationalUnit, `hub ${hubId}`],
      [OID.commonName, 'edgehub Issuing CA'],
    ]);
    const now = Date.now();
    const notAfter = new Date(Math.min(now + ISSUING_VALIDITY_YEARS * YEAR_MS, rootCa.notAfter.getTime()));
    const { der } = await issueCertificate({
      subject: name,
      publicKey: key.publicKey,
      issuer: await signerOf(rootCa),
      notBefore: new Date(now - BACKDATE_MS),
      notAfter,
      profile: { kind: 'ca', pathLength: 0 },
      // where relying parties find the root's CRL of issuing CAs, and the root's certificate
      revocation: { crl: pkiUrls('root').crl, caIssuers: pkiUrls('root').caIssuers },
    });
    issuing = await insertOnce(
      { id: newId(), kind: 'ISSUING', hubId, subject, certificatePem: certificatePem(der), privateKeySealed: key.sealed, notAfter },
      () => CertificateAuthority.findOne({ where: { kind: 'ISSUING', hubId } }),
    );
  }
  return {
    id: issuing.id,
    urls: pkiUrls(hubId),
    signer: await signerOf(issuing),
    certificatePem: issuing.certificatePem,
    chainPem: issuing.certificatePem + rootCa.certificatePem,
  };
}

/** The hub's issuing CA with its decrypted key, created on first use, kept in a bounded cache with a TTL. */
export function hubCa(hubId: string): Promise<LoadedCa> {
  hubCas ??= pkiCache<Promise<LoadedCa>>();
  return cached(hubCas, hubId, () => loadHubCa(hubId));
}

/** How many decrypted hub CAs this process holds now (expired ones not counted). */
export function cachedHubCaCount(): number {
  hubCas?.purgeStale();
  return hubCas?.size ?? 0;
}
