/**
 * An agent renews its own certificate before it ends: with a CSR for a new key and a proof that it holds the current
 * one, a short ES256 JWT signed by that key (`aud` = `agent-renewal:<agentId>`, `iat` within 5 minutes and at most 5 s
 * ahead, `csr` = the SHA-256 of the CSR as sent, base64url). No API key and no enrollment JWT: the agent's key is the credential, as a
 * client certificate is at the edge. The worker (which alone holds CA keys) signs the CSR and replaces the agent's
 * certificate in one conditional update (on the certificate the proof was checked against), so of two renewals one
 * wins. The certificate replaced is recorded revoked (superseded) in that transaction, so the CRL and the OCSP
 * responder say so. The edge admits the new certificate from then on; connections made with the old one go on until they close.
 *
 * A renewal whose answer was lost (the agent retries with the same CSR) is answered with the certificate already
 * issued for that key: the CSR's own signature shows the caller holds it.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { jwtVerify } from 'jose';
import { QueryTypes } from 'sequelize';
import { db, withTransaction } from '../../shared/db.js';
import { refusal } from '../../shared/errors.js';
import { enqueue } from '../jobs/enqueue.js';
import { certificatePem, certifiesKey } from '../../shared/pki/certificates.js';
import { agentCsr, agentIdentity, type AgentIdentity, signAgentCsr } from './agents.js';
import { waitForPkiJob } from './pkiJobs.js';
import { recordAgentRevocations, requestCrlsQuietly } from './revocations.js';
import { REVOCATION_REASONS } from '../../shared/pki/crl.js';

export const RENEW_AGENT_JOB = 'pki.renewAgent';

/** How old a renewal proof may be (its `iat`). */
const PROOF_MAX_AGE = '5m';
/**
 * How far ahead of this clock a proof's `iat` may be: the clock skew of two NTP-synchronised machines (well under a
 * second), with room to spare. No more: a proof dated ahead stays usable that much longer than PROOF_MAX_AGE, so a
 * wide tolerance would let a key held for a moment sign proofs that outlive it.
 */
const CLOCK_TOLERANCE_S = 5;

export interface RenewAgentPayload {
  agentId: string;
  csr: string;
  /** The certificate the proof was checked against: it is replaced only while it is still the agent's. */
  fingerprint: string;
}

const proofRefused = (why: string) => refusal('EH_AGENT_PROOF_INVALID', `agent renewal refused: ${why}`);

/** The SHA-256 of a CSR as the agent sent it, base64url: what the proof's `csr` claim must be. */
const csrDigest = (csr: string) => createHash('sha256').update(csr).digest('base64url');

export async function renewAgent(hubId: string, agentId: string, input: { csr: string; proof: string }): Promise<AgentIdentity> {
  const [row] = await db().query<{ certificate_pem: string; fingerprint_sha256: string; not_after: Date }>(
    `SELECT certificate_pem, fingerprint_sha256, not_after FROM agents WHERE id = :agentId AND hub_id = :hubId`,
    { replacements: { agentId, hubId }, type: QueryTypes.SELECT },
  );
  // an unknown or revoked agent is told no more than a bad proof is
  if (!row) throw proofRefused('no enrolled agent of this hub has this id (revoked?)');
  const csr = await agentCsr(input.csr);
  // a retry of a renewal that went through: the CSR (signed by the key now certified) asks for what it already has
  if (certifiesKey(row.certificate_pem, csr.spkiDer)) return agentIdentity(hubId, agentId);
  if (new Date(row.not_after).getTime() <= Date.now()) {
    throw refusal('EH_AGENT_CERT_EXPIRED', `agent ${agentId}'s certificate expired at ${new Date(row.not_after).toISOString()}: enroll the machine again`);
  }
  try {
    const { payload } = await jwtVerify(input.proof, new X509Certificate(row.certificate_pem).publicKey, {
      algorithms: ['ES256'],
      audience: `agent-renewal:${agentId}`,
      maxTokenAge: PROOF_MAX_AGE,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['iat', 'csr'],
    });
    if (payload.csr !== csrDigest(input.csr)) throw new Error('the proof is for another CSR');
  } catch (err) {
    throw proofRefused(`the proof does not verify with the agent's current certificate (${(err as Error).message})`);
  }
  const execution = await enqueue({
    type: RENEW_AGENT_JOB,
    hubId,
    resourceType: 'agent',
    resourceId: agentId,
    payload: { agentId, csr: input.csr, fingerprint: row.fingerprint_sha256 } satisfies RenewAgentPayload as unknown as Record<string, unknown>,
    createdBy: `agent:${agentId}`,
    jobOptions: { attempts: 3, backoff: { type: 'fixed', delay: 200 } },
  });
  await waitForPkiJob(execution.processId);
  return agentIdentity(hubId, agentId);
}

/**
 * The worker's part: signs the CSR with the hub's issuing CA and replaces the agent's certificate, only while the
 * certificate the proof was checked against is still the agent's. A retry after a commit finds the key certified.
 */
export async function renewAgentCertificate(hubId: string, p: RenewAgentPayload): Promise<{ agentId: string }> {
  const { csr, notBefore, notAfter, issued } = await signAgentCsr(hubId, p.csr);
  // the certificate replaced is revoked (superseded) in the same transaction as the replacement
  const renewed = await withTransaction(async (transaction): Promise<{ replaced: boolean; caId?: string }> => {
    const updated = await db().query<{ id: string; serialNumber: string }>(
      `UPDATE agents AS a SET certificate_pem = :pem, fingerprint_sha256 = :fingerprint, serial_number = :serial, not_before = :notBefore, not_after = :notAfter
       FROM agents AS old WHERE old.id = a.id AND a.id = :agentId AND a.hub_id = :hubId AND a.fingerprint_sha256 = :previous
       RETURNING a.id, old.serial_number AS "serialNumber"`,
      {
        replacements: {
          pem: certificatePem(issued.der),
          fingerprint: issued.fingerprintSha256,
          serial: issued.serialNumber,
          notBefore,
          notAfter,
          agentId: p.agentId,
          hubId,
          previous: p.fingerprint,
        },
        type: QueryTypes.SELECT,
        transaction,
      },
    );
    if (!updated.length) return { replaced: false };
    return { replaced: true, caId: await recordAgentRevocations(hubId, updated, REVOCATION_REASONS.superseded, `agent:${p.agentId}`, transaction) };
  });
  if (renewed.replaced) {
    if (renewed.caId) await requestCrlsQuietly([{ caId: renewed.caId, hubId }], 'scheduler');
    return { agentId: p.agentId };
  }
  const [now] = await db().query<{ certificate_pem: string }>(`SELECT certificate_pem FROM agents WHERE id = :agentId AND hub_id = :hubId`, {
    replacements: { agentId: p.agentId, hubId },
    type: QueryTypes.SELECT,
  });
  if (now && certifiesKey(now.certificate_pem, new Uint8Array(csr.subjectPublicKeyInfo.toSchema().toBER(false)))) return { agentId: p.agentId };
  throw proofRefused('the agent was revoked, or its certificate was renewed by another request meanwhile');
}
