/**
 * The agent renews its certificate before it ends, while it runs: once a third of its validity is left (checked at
 * start and every hour), it makes a new P-256 key and a CSR, signs a short proof with its current key (an ES256 JWT:
 * `aud` `agent-renewal:<id>`, `iat`, `csr` the SHA-256 of the CSR as sent, base64url) and POSTs both to
 * `/hub/v2/{hubId}/agents/{id}/renew` on the service it enrolled with. The new key and CSR are kept in
 * agent.renewal.json (0600) until the answer is in, so that a renewal whose answer was lost is asked for again with
 * the same key (the service answers with the certificate it already issued for it). Then agent.crt and agent.key are
 * replaced (each written aside, then renamed), and the next connections use them; the open ones go on.
 */
import { createHash, createPrivateKey, createPublicKey, sign, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { keyAndCsr } from './csr.js';
import { post } from './enroll.js';
import { EnrollError } from './errors.js';

const RENEWAL_FILE = 'agent.renewal.json';

/**
 * Whether a third or less of the certificate's validity is left.
 * @param {import('./identity.js').AgentIdentity} identity
 * @param {number} [now]
 */
export function renewalDue(identity, now = Date.now()) {
  const cert = new X509Certificate(identity.certificatePem);
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return to - now <= (to - from) / 3;
}

/**
 * The SubjectPublicKeyInfo DER of a certificate's key (the first of a chain) or of a private key's.
 * @param {string} pem
 */
const spki = (pem) => (pem.includes('CERTIFICATE') ? new X509Certificate(pem).publicKey : createPublicKey(pem)).export({ type: 'spki', format: 'der' });

/**
 * The proof that this agent holds its current key, for this CSR.
 * @param {import('./identity.js').AgentIdentity} identity
 * @param {string} csrPem
 */
export function renewalProof(identity, csrPem) {
  const part = (/** @type {object} */ o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const signed = `${part({ alg: 'ES256', typ: 'JWT' })}.${part({ aud: `agent-renewal:${identity.id}`, iat: Math.floor(Date.now() / 1000), csr: createHash('sha256').update(csrPem).digest('base64url') })}`;
  const signature = sign('sha256', Buffer.from(signed), { key: createPrivateKey(identity.keyPem), dsaEncoding: 'ieee-p1363' });
  return `${signed}.${signature.toString('base64url')}`;
}

/**
 * Writes `text` to `file` through a file beside it and a rename (never half a file).
 * @param {string} file
 * @param {string} text
 * @param {number} mode
 */
function replace(file, text, mode) {
  const aside = `${file}.next`;
  writeFileSync(aside, text, { mode });
  renameSync(aside, file);
}

/**
 * The pending renewal's key and CSR, or undefined. A file that cannot be read whole was cut short while it was
 * written, before its request went out (it is written first): it is dropped, and the next renewal makes a new key.
 * @param {string} pendingFile
 * @returns {{ keyPem: string; csrPem: string } | undefined}
 */
function readPending(pendingFile) {
  if (!existsSync(pendingFile)) return undefined;
  try {
    const pending = JSON.parse(readFileSync(pendingFile, 'utf8'));
    if (typeof pending?.keyPem === 'string' && typeof pending?.csrPem === 'string') return pending;
  } catch {
    // cut short: see above
  }
  rmSync(pendingFile, { force: true });
  return undefined;
}

/**
 * Finishes a renewal that stopped between its two renames (the certificate already the new key's, the key not yet):
 * called when the identity is read.
 * @param {string} dir
 */
export function settleRenewal(dir) {
  const pendingFile = path.join(dir, RENEWAL_FILE);
  const pending = readPending(pendingFile);
  if (!pending) return;
  const certificate = readFileSync(path.join(dir, 'agent.crt'), 'utf8');
  if (!spki(certificate).equals(spki(pending.keyPem))) return; // not renewed yet: the next attempt uses the same key
  replace(path.join(dir, 'agent.key'), pending.keyPem, 0o600);
  rmSync(pendingFile, { force: true });
}

/**
 * Renews now: asks the service, then replaces the files and the identity's key and certificate in place (the links
 * read them at each dial). Throws an EnrollError saying why when the service refuses or cannot be reached.
 * @param {string} dir
 * @param {import('./identity.js').AgentIdentity} identity
 * @returns {Promise<Date>} the new certificate's end
 */
export async function renew(dir, identity) {
  if (!identity.serviceUrl) throw new EnrollError('the identity does not say which service enrolled it (serviceUrl in agent.json)');
  const pendingFile = path.join(dir, RENEWAL_FILE);
  let pending = readPending(pendingFile);
  if (!pending) {
    pending = keyAndCsr({ cn: `agent of ${identity.envZId}` });
    writeFileSync(pendingFile, JSON.stringify(pending), { mode: 0o600, flag: 'wx' });
  }
  const url = new URL(`/hub/v2/${encodeURIComponent(identity.hubId)}/agents/${encodeURIComponent(identity.id)}/renew`, identity.serviceUrl);
  const r = await post(url, { csr: pending.csrPem, proof: renewalProof(identity, pending.csrPem) });
  if (r.status !== 200) throw new EnrollError(`renewal refused (${r.status}): ${r.json?.message ?? r.json?.error ?? 'no reason given'}`);
  const certificate = r.json?.certificate;
  if (typeof certificate !== 'string' || !spki(certificate).equals(spki(pending.keyPem)))
    throw new EnrollError('the renewal answered without a certificate of the new key');
  // the certificate first: a stop between the two is finished by settleRenewal, which needs the pending key
  replace(path.join(dir, 'agent.crt'), certificate, 0o644);
  replace(path.join(dir, 'agent.key'), pending.keyPem, 0o600);
  rmSync(pendingFile, { force: true });
  identity.certificatePem = certificate;
  identity.keyPem = pending.keyPem;
  return new Date(new X509Certificate(certificate).validTo);
}
