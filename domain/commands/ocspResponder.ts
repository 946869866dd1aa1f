/**
 * The OCSP responder (RFC 6960) of each hub's issuing CA, in the web process: answers are signed by the CA's
 * delegated responder (its certificate and sealed key made by the worker, crlPublication.ts), never by the CA key.
 *
 * Signed answers are kept per CertID until the next change of that CA: a new revocation or responder NOTIFYs
 * `edgehub_pki` (migration 1500) and every web process drops the CA's answers (the same scheme as the auth cache:
 * nothing is cached while the LISTEN connection is down, and what was read while a notification about that CA came
 * in is not kept). So a burst of checks of one certificate costs one signature; a request with a nonce is signed for itself
 * (its status still comes from the cache); `unknown` is never kept (the serial may be issued a moment later).
 * A cached answer is also signed anew once HUB_CRL_REFRESH has passed, so its nextUpdate stays ahead.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { config } from '../../shared/config.js';
import { preparedQuery } from '../../shared/db.js';
import { isDomainError } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import { listen, type Listener } from '../../shared/pgListen.js';
import { decryptSecret } from '../../shared/secrets.js';
import { keyIdentifier, publicKeyInfo } from '../../shared/pki/certificates.js';
import { pemToDer, readElement } from '../../shared/pki/der.js';
import { pkiCache } from '../../shared/pki/cache.js';
import {
  buildOcspResponse,
  certIdMatches,
  MalformedOcspRequest,
  OCSP_STATUS,
  ocspError,
  parseOcspRequest,
  type CertId,
  type CertStatus,
  type IssuerHashes,
  type Responder,
} from '../../shared/pki/ocsp.js';
import { type Authority, authorityOf, awaitPublication } from './pkiPublication.js';
import { updateWindow } from './revocations.js';

const PKI_CHANNEL = 'edgehub_pki';
/** The largest request read (a request about 16 certificates with a signature stays far below). */
export const OCSP_MAX_REQUEST_BYTES = 16 * 1024;

interface CachedAnswer {
  status: CertStatus;
  /** The signed answer to this CertID alone without a nonce, while it is fresh. */
  der?: Buffer;
  signedAt: number;
}

interface HubResponder {
  caId: string;
  issuer: IssuerHashes;
  responder: Responder;
  answers: LRUCache<string, CachedAnswer>;
  /** Answers being made, by CertID: a burst that finds none cached waits for the one signature under way. */
  pending: Map<string, Promise<Buffer>>;
  /** Set when a change of its CA was heard: what is learnt with it afterwards is not kept. */
  dropped?: boolean;
}

/** Responders by hub (their keys decrypted): bounded and expiring like the other PKI caches (HUB_PKI_CACHE_MAX, _TTL). */
let hubCache: LRUCache<string, HubResponder> | undefined;
const hubs = () => (hubCache ??= pkiCache<HubResponder>());
const hubOfCa = new Map<string, string>();
/** Notifications heard, per CA, and losses of the LISTEN connection: a load that overlapped one is not kept. */
const changes = new Map<string, number>();
let resets = 0;
let listener: Listener | undefined;

function dropCa(caId: string) {
  changes.set(caId, (changes.get(caId) ?? 0) + 1);
  const hubId = hubOfCa.get(caId);
  hubOfCa.delete(caId);
  if (hubId === undefined) return;
  const hub = hubs().get(hubId);
  if (hub) hub.dropped = true;
  hubs().delete(hubId);
}

function dropAll() {
  resets++;
  for (const hub of hubCache?.values() ?? []) hub.dropped = true;
  hubCache?.clear();
  hubCache = undefined;
  hubOfCa.clear();
}

/** Starts listening for revocations and responder changes (idempotent); the cache is used only while it listens. */
export function startOcspCache(): Listener {
  // on the process's one LISTEN connection (shared/pgListen.ts), beside the auth cache's channel
  listener ??= listen(PKI_CHANNEL, dropCa, dropAll);
  return listener;
}

export async function stopOcspCache(): Promise<void> {
  const l = listener;
  listener = undefined;
  dropAll();
  await l?.close();
}

const live = () => startOcspCache().live;

/** The issuer's Name DER and key bits (what a CertID hashes), from its certificate. */
function issuerHashes(certificatePem: string): IssuerHashes {
  const der = pemToDer(certificatePem, ['CERTIFICATE']) as Buffer;
  const tbs = readElement(readElement(der).content);
  // TBSCertificate: [0] version, serial, signature, issuer, validity, subject, subjectPublicKeyInfo, ...
  const parts: Buffer[] = [];
  for (let offset = 0; offset < tbs.content.length && parts.length < 7; ) {
    const e = readElement(tbs.content, offset);
    parts.push(e.raw);
    offset += e.raw.length;
  }
  const spki = readElement(parts[6]);
  const bits = readElement(spki.content, readElement(spki.content).raw.length);
  return { nameDer: parts[5], keyBits: bits.content.subarray(1) };
}

async function loadResponder(ca: Authority): Promise<HubResponder | undefined> {
  const [row] = await preparedQuery<{ certificatePem: string; privateKeySealed: string }>(
    'pki_ocsp_responder',
    `SELECT certificate_pem AS "certificatePem", private_key_sealed AS "privateKeySealed" FROM ocsp_responders WHERE ca_id = $1`,
    [ca.id],
  );
  if (!row) return undefined;
  const certificate = new X509Certificate(row.certificatePem);
  return {
    caId: ca.id,
    issuer: issuerHashes(ca.certificatePem),
    responder: {
      certificateDer: certificate.raw,
      privateKey: createPrivateKey(decryptSecret(row.privateKeySealed)),
      keyHash: keyIdentifier(publicKeyInfo(certificate.publicKey.export({ type: 'spki', format: 'der' }))),
    },
    answers: new LRUCache<string, CachedAnswer>({ max: 10_000 }),
    pending: new Map(),
  };
}

/** Responders being loaded, by hub: a burst of first requests loads (and asks the worker for) one. */
const loading = new Map<string, Promise<HubResponder>>();

/** The hub's responder: cached while the cache listens, made by the worker on first use. */
function responderOf(hubId: string): Promise<HubResponder> | HubResponder {
  const cached = live() ? hubs().get(hubId) : undefined;
  if (cached) return cached;
  let pending = loading.get(hubId);
  if (!pending) {
    pending = loadHub(hubId).finally(() => loading.delete(hubId));
    loading.set(hubId, pending);
  }
  return pending;
}

async function loadHub(hubId: string): Promise<HubResponder> {
  const resetsBefore = resets;
  const ca = await authorityOf(hubId);
  const changesBefore = changes.get(ca.id) ?? 0;
  let loaded = await loadResponder(ca);
  if (!loaded) {
    await awaitPublication(ca);
    loaded = await loadResponder(ca);
  }
  if (!loaded) throw new Error('no OCSP responder after its publication');
  if (live() && resets === resetsBefore && (changes.get(ca.id) ?? 0) === changesBefore) {
    hubs().set(hubId, loaded);
    hubOfCa.set(ca.id, hubId);
  }
  return loaded;
}

/**
 * A serial's status at its CA: revoked (time, reason), good (issued by it and not revoked: a client certificate or an
 * agent's current certificate) or unknown.
 */
async function statusOf(caId: string, serialNumber: string): Promise<CertStatus> {
  const [row] = await preparedQuery<{ revokedAt: Date | null; reasonCode: number | null; issued: boolean }>(
    'pki_ocsp_status',
    `SELECT r.revoked_at AS "revokedAt", r.reason_code AS "reasonCode",
       EXISTS (SELECT 1 FROM client_certificates c WHERE c.issuer_id = $1 AND c.serial_number = $2)
       OR EXISTS (SELECT 1 FROM agents a JOIN certificate_authorities ca ON ca.hub_id = a.hub_id AND ca.kind = 'ISSUING'
                   WHERE ca.id = $1 AND a.serial_number = $2) AS issued
     FROM (SELECT 1) AS one LEFT JOIN certificate_revocations r ON r.ca_id = $1 AND r.serial_number = $2`,
    [caId, serialNumber],
  );
  if (row.revokedAt) return { kind: 'revoked', revokedAt: row.revokedAt, reasonCode: row.reasonCode ?? 0 };
  return row.issued ? { kind: 'good' } : { kind: 'unknown' };
}

function sign(hub: HubResponder, answers: { certId: CertId; status: CertStatus }[], nonce: Buffer | undefined, now: number): Buffer {
  const { thisUpdate, nextUpdate } = updateWindow(now);
  return buildOcspResponse(
    hub.responder,
    answers.map((a) => ({ certId: a.certId.raw, status: a.status, thisUpdate, nextUpdate })),
    thisUpdate,
    nonce,
  );
}

/**
 * The DER OCSPResponse for a request's DER to the hub's responder: malformedRequest for anything that is not an
 * OCSPRequest, unauthorized when it asks about a CA other than this hub's (or the hub has none, or is `root`), tryLater when the
 * responder cannot be had now; never a throw.
 */
export async function answerOcsp(hubId: string, der: Buffer): Promise<Buffer> {
  let request;
  try {
    request = parseOcspRequest(der);
  } catch (err) {
    // MalformedOcspRequest, or anything else a request's bytes could make the reader throw: never a 500
    if (!(err instanceof MalformedOcspRequest)) logger.warn({ hubId, err: (err as Error).message }, 'OCSP request not read');
    return ocspError(OCSP_STATUS.malformedRequest);
  }
  // the root CA publishes a CRL of its issuing CAs, and no OCSP responder
  if (hubId.toLowerCase() === 'root') return ocspError(OCSP_STATUS.unauthorized);
  let hub: HubResponder;
  try {
    hub = await responderOf(hubId);
  } catch (err) {
    if (isDomainError(err, 'EH_NOT_FOUND')) return ocspError(OCSP_STATUS.unauthorized);
    logger.warn({ hubId, err: (err as Error).message }, 'OCSP responder not available');
    return ocspError(OCSP_STATUS.tryLater);
  }
  if (!request.certIds.every((id) => certIdMatches(id, hub.issuer))) return ocspError(OCSP_STATUS.unauthorized);
  const now = Date.now();
  const single = request.certIds.length === 1 && !request.nonce;
  if (!single) return answer(hub, hubId, request.certIds, request.nonce, now);
  const key = request.certIds[0].raw.toString('latin1');
  const hit = hub.answers.get(key);
  if (hit?.der && fresh(hit, now)) return hit.der;
  let pending = hub.pending.get(key);
  if (!pending) {
    pending = answer(hub, hubId, request.certIds, undefined, now).finally(() => hub.pending.delete(key));
    hub.pending.set(key, pending);
  }
  return pending;
}

const fresh = (a: CachedAnswer | undefined, now: number) => a !== undefined && now - a.signedAt < config().crlRefreshMs;

/**
 * Signs the answer about `certIds` (with the nonce, if any), their statuses from the cache or the database, and keeps
 * what it learnt: each known status, and the signed answer itself when it is about one certificate without a nonce.
 */
async function answer(hub: HubResponder, hubId: string, certIds: CertId[], nonce: Buffer | undefined, now: number): Promise<Buffer> {
  try {
    const answers = await Promise.all(
      certIds.map(async (certId) => {
        const key = certId.raw.toString('latin1');
        const hit = hub.answers.get(key);
        const status = hit && fresh(hit, now) ? hit.status : await statusOf(hub.caId, certId.serialNumber);
        return { certId, key, status };
      }),
    );
    const signed = sign(hub, answers, nonce, now);
    const single = certIds.length === 1 && !nonce;
    // a change of the CA heard meanwhile marked this responder dropped: its answers are not kept
    if (live() && !hub.dropped) {
      for (const a of answers) {
        if (a.status.kind === 'unknown') continue;
        const kept = hub.answers.get(a.key);
        hub.answers.set(
          a.key,
          single ? { status: a.status, der: signed, signedAt: now } : { status: a.status, der: kept?.der, signedAt: kept?.signedAt ?? now },
        );
      }
    }
    return signed;
  } catch (err) {
    logger.warn({ hubId, err: (err as Error).message }, 'OCSP answer not made');
    return ocspError(OCSP_STATUS.tryLater);
  }
}
