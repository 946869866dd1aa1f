/**
 * Agents: enrollment JWTs for an environment, the enrollment that spends one and stores
 * the agent with its certificate (signed in the worker, which alone holds CA keys), the list of an environment's
 * agents with where they are connected, and revocation.
 */
import { QueryTypes } from 'sequelize';
import { config } from '../../shared/config.js';
import { db, withTransaction } from '../../shared/db.js';
import { durationMs } from '../../shared/durations.js';
import { badRequest, isDomainError, notFound, refusal } from '../../shared/errors.js';
import { newId, randomToken } from '../../shared/ids.js';
import { enqueue } from '../jobs/enqueue.js';
import { hubCa, leafValidityFor } from './certificateAuthorities.js';
import { certificatePem, type Issued, issueCertificate } from '../../shared/pki/certificates.js';
import { parseCsr, readCsr, type ParsedCsr } from '../../shared/pki/csr.js';
import { JwtRefusal, signJwt, verifyEnrollmentJwt } from '../../shared/pki/enrollmentJwt.js';
import { reachThroughAgents } from './environments.js';
import { recordAgentRevocations, requestCrlsQuietly } from './revocations.js';
import { REVOCATION_REASONS } from '../../shared/pki/crl.js';
import { waitForPkiJob } from './pkiJobs.js';
import { signingKeyFor, verificationKey } from './signingKeys.js';
import { sha256 } from '../../shared/secrets.js';

export const ENROLL_AGENT_JOB = 'pki.enrollAgent';

/** An agent is seen connected while an edge refreshed its connection within this long (heartbeats every 5 s). */
const AGENT_SEEN_MS = 15_000;

const DEFAULT_TTL = 'PT1H';
const MAX_TTL_MS = 7 * 86_400_000;

const agentEnrollUrl = (hubId: string) => `${config().publicBaseUrl}/hub/v2/${hubId}/agents/enroll`;

/** The edge addresses enrollment hands agents (HUB_EDGE_AGENT_ADDRESSES). */
const agentEdgeAddresses = (): string[] => config().edge.agentAddresses;

async function environmentOf(hubId: string, envZId: string): Promise<void> {
  const [row] = await db().query(`SELECT 1 FROM environments WHERE hub_id = :hubId AND env_z_id = :envZId`, {
    replacements: { hubId, envZId },
    type: QueryTypes.SELECT,
  });
  if (!row) throw notFound('environment', envZId);
}

export interface AgentEnrollment {
  envZId: string;
  hubId: string;
  jwt: string;
  url: string;
  expiresAt: Date;
}

/** A one-time ES256 JWT for one agent of the environment, signed like the certificate enrollment JWT. */
export async function createAgentEnrollment(hubId: string, envZId: string, input: { ttl?: string }, createdBy: string): Promise<AgentEnrollment> {
  await environmentOf(hubId, envZId);
  const ttl = input.ttl ?? DEFAULT_TTL;
  const ttlMs = durationMs(ttl);
  if (!ttlMs || ttlMs <= 0) throw badRequest(`ttl: '${ttl}' is not an ISO 8601 duration such as PT1H`);
  if (ttlMs > MAX_TTL_MS) throw badRequest('ttl: at most P7D');
  const token = randomToken(32);
  const expiresAt = new Date(Math.floor((Date.now() + ttlMs) / 1000) * 1000);
  const id = newId();
  await db().query(
    `INSERT INTO agent_enrollments (id, hub_id, env_z_id, token_digest, expires_at, created_by) VALUES (:id, :hubId, :envZId, :digest, :expiresAt, :createdBy)`,
    { replacements: { id, hubId, envZId, digest: sha256(token), expiresAt, createdBy } },
  );
  const url = agentEnrollUrl(hubId);
  const jwt = await signJwt({ url, env: envZId, kind: 'agent' }, { hubId, subject: token, expiresAt }, await signingKeyFor(expiresAt));
  return { envZId, hubId, jwt, url, expiresAt };
}

interface EnrollmentRow {
  id: string;
  env_z_id: string;
  expires_at: Date;
  spent_at: Date | null;
}

export interface AgentIdentity {
  id: string;
  hubId: string;
  envZId: string;
  /** The agent's certificate, then the hub's issuing CA and the root. */
  certificatePem: string;
  /** The CA that signs the edge's certificates (what the agent trusts when it dials an edge). */
  edgeCaPem: string;
  /** A name the edge's certificate covers, sent as SNI. */
  edgeServerName: string;
  edges: string[];
  createdAt: Date;
}

/** Payload of the enrollment job. */
export interface EnrollAgentPayload {
  enrollmentId: string;
  agentId: string;
  csr: string;
}

/**
 * Redeems an agent enrollment JWT with a CSR (a P-256 key the agent made): the JWT and its enrollment are checked
 * here (403 before any CSR work), the CSR parsed (400), then the worker signs it and, in one statement, spends the
 * enrollment and stores the agent: of two requests with one JWT, one gets an agent and the other 403.
 */
export async function enrollAgent(hubId: string, input: { jwt: string; csr: string }): Promise<AgentIdentity> {
  let claims: Awaited<ReturnType<typeof verifyEnrollmentJwt>>;
  try {
    claims = await verifyEnrollmentJwt(input.jwt, hubId, verificationKey);
  } catch (err) {
    if (err instanceof JwtRefusal)
      throw refusal(err.label === 'expired' ? 'EH_AGENT_JWT_EXPIRED' : 'EH_AGENT_JWT_INVALID', err.message.replace(/^enrollment JWT/, 'agent enrollment JWT'));
    throw err;
  }
  const [row] = await db().query<EnrollmentRow>(
    `SELECT id, env_z_id, expires_at, spent_at FROM agent_enrollments WHERE token_digest = :digest AND hub_id = :hubId`,
    {
      replacements: { digest: sha256(claims.sub), hubId },
      type: QueryTypes.SELECT,
    },
  );
  if (!row) throw refusal('EH_AGENT_JWT_INVALID', 'this JWT is not an agent enrollment of this hub (or it was deleted)');
  if (row.spent_at) throw refusal('EH_AGENT_JWT_SPENT', 'this agent enrollment JWT was already used');
  if (new Date(row.expires_at).getTime() <= Date.now()) throw refusal('EH_AGENT_JWT_EXPIRED', 'this agent enrollment JWT has expired');
  await agentCsr(input.csr);
  const agentId = newId();
  const execution = await enqueue({
    type: ENROLL_AGENT_JOB,
    hubId,
    resourceType: 'agent',
    resourceId: agentId,
    payload: { enrollmentId: row.id, agentId, csr: input.csr } satisfies EnrollAgentPayload as unknown as Record<string, unknown>,
    createdBy: `agent-enrollment:${row.id}`,
    jobOptions: { attempts: 3, backoff: { type: 'fixed', delay: 200 } },
  });
  await waitForPkiJob(execution.processId);
  return agentIdentity(hubId, agentId);
}

/** An agent's CSR, checked: a PKCS#10 request this service accepts, for an ECDSA P-256 key (400 otherwise). */
export async function agentCsr(pem: string): Promise<ParsedCsr> {
  let csr;
  try {
    csr = await parseCsr(pem);
  } catch (err) {
    if (isDomainError(err)) throw refusal('EH_CSR_INVALID', `csr: ${err.message}`);
    throw err;
  }
  if (csr.keyDescription !== 'EC P-256') throw refusal('EH_CSR_INVALID', `csr: an agent key must be ECDSA P-256 (this one is ${csr.keyDescription})`);
  return csr;
}

/**
 * Signs an agent's CSR (as the job payload carries it) with the hub's issuing CA: the client profile, the CSR's
 * subject (the agent's id as CN), the agents' validity from now. Enrollment and renewal both issue this way.
 */
export async function signAgentCsr(
  hubId: string,
  csrPayload: string,
): Promise<{ csr: ReturnType<typeof readCsr>; notBefore: Date; notAfter: Date; issued: Issued }> {
  const csr = readCsr(csrPayload);
  const ca = await hubCa(hubId);
  const { notBefore, notAfter } = leafValidityFor(config().security.agentCertValidityMs);
  const issued = await issueCertificate({
    subject: csr.subject,
    publicKey: csr.subjectPublicKeyInfo,
    issuer: ca.signer,
    notBefore,
    notAfter,
    profile: { kind: 'client' },
    // CRL Distribution Points and Authority Information Access: where others check its revocation
    revocation: ca.urls,
  });
  return { csr, notBefore, notAfter, issued };
}

/**
 * The worker's part: signs the CSR with the hub's issuing CA (client profile, the agent's id as CN) and, in one
 * statement, spends the enrollment and stores the agent. A retry after a commit finds its agent.
 */
export async function issueAgentCertificate(hubId: string, p: EnrollAgentPayload, createdBy: string): Promise<{ agentId: string }> {
  const [existing] = await db().query(`SELECT id FROM agents WHERE id = :id`, { replacements: { id: p.agentId }, type: QueryTypes.SELECT });
  if (existing) return { agentId: p.agentId };
  const { notBefore, notAfter, issued } = await signAgentCsr(hubId, p.csr);
  const inserted = await withTransaction(async (transaction) => {
    const rows = await db().query<{ id: string; env_z_id: string }>(
      `WITH spent AS (
         UPDATE agent_enrollments SET spent_at = now(), agent_id = NULL
         WHERE id = :enrollmentId AND hub_id = :hubId AND spent_at IS NULL AND expires_at > now()
         RETURNING env_z_id
       )
       INSERT INTO agents (id, hub_id, env_z_id, certificate_pem, fingerprint_sha256, serial_number, not_before, not_after, created_by)
       SELECT :agentId, :hubId, spent.env_z_id, :pem, :fingerprint, :serial, :notBefore, :notAfter, :createdBy FROM spent
       RETURNING id, env_z_id`,
      {
        replacements: {
          enrollmentId: p.enrollmentId,
          hubId,
          agentId: p.agentId,
          pem: certificatePem(issued.der),
          fingerprint: issued.fingerprintSha256,
          serial: issued.serialNumber,
          notBefore,
          notAfter,
          createdBy,
        },
        type: QueryTypes.SELECT,
        transaction,
      },
    );
    if (rows.length) {
      await db().query(`UPDATE agent_enrollments SET agent_id = :agentId WHERE id = :enrollmentId`, {
        replacements: { agentId: p.agentId, enrollmentId: p.enrollmentId },
        transaction,
      });
      // fail closed from the first agent on: its environment's targets are reached only through its agents
      await reachThroughAgents(hubId, rows[0].env_z_id, transaction);
    }
    return rows.length > 0;
  });
  if (!inserted) throw refusal('EH_AGENT_JWT_SPENT', 'this agent enrollment JWT was already used or has expired');
  return { agentId: p.agentId };
}

/** The CA of the edge's certificates for standard frontends, and a name under the public frontend's domain. */
async function edgeTrust(): Promise<{ edgeCaPem: string; edgeServerName: string }> {
  // the operator's own certificate files (a public CA): agents trust their system's roots (an empty edgeCa)
  const operatorCertificate = Boolean(config().edge.tlsCertFile);
  const [issuer] = await db().query<{ certificate_pem: string }>(`SELECT certificate_pem FROM frontend_issuers ORDER BY created_at LIMIT 1`, {
    type: QueryTypes.SELECT,
  });
  const [frontend] = await db().query<{ url_template: string }>(`SELECT url_template FROM frontends WHERE hub_id IS NULL AND public_name = 'public'`, {
    type: QueryTypes.SELECT,
  });
  const domain = /^[a-z]+:\/\/\{token\}\.([^/:]+)/i.exec(frontend?.url_template ?? '')?.[1] ?? 'share.localhost';
  return { edgeCaPem: operatorCertificate ? '' : (issuer?.certificate_pem ?? ''), edgeServerName: `agent.${domain.toLowerCase()}` };
}

export async function agentIdentity(hubId: string, agentId: string): Promise<AgentIdentity> {
  const [row] = await db().query<{ id: string; hub_id: string; env_z_id: string; certificate_pem: string; chain: string; created_at: Date }>(
    `SELECT a.id, a.hub_id, a.env_z_id, a.certificate_pem, a.created_at,
            (SELECT i.certificate_pem || r.certificate_pem FROM certificate_authorities i, certificate_authorities r
              WHERE i.hub_id = a.hub_id AND i.kind = 'ISSUING' AND r.kind = 'ROOT' LIMIT 1) AS chain
       FROM agents a WHERE a.id = :agentId AND a.hub_id = :hubId`,
    { replacements: { agentId, hubId }, type: QueryTypes.SELECT },
  );
  if (!row) throw notFound('agent', agentId);
  return {
    id: row.id,
    hubId: row.hub_id,
    envZId: row.env_z_id,
    certificatePem: row.certificate_pem + (row.chain ?? ''),
    ...(await edgeTrust()),
    edges: agentEdgeAddresses(),
    createdAt: row.created_at,
  };
}

export interface AgentState {
  id: string;
  createdAt: Date;
  connected: boolean;
  connectedAt: Date | null;
  lastSeenAt: Date | null;
  edges: string[];
  /** Its pool state as the edges it is connected to last heard it (the defaults while it is not connected). */
  weight: number;
  priority: number;
  draining: boolean;
  /** Shares whose target it reports down (at any edge). */
  targetsDown: string[];
}

/** An environment's agents with where they are connected now (edges that refreshed within AGENT_SEEN_MS). */
export async function agentsOf(hubId: string, envZId: string): Promise<AgentState[]> {
  const rows = await db().query<{
    id: string;
    created_at: Date;
    connected_at: Date | null;
    last_seen_at: Date | null;
    edges: string[] | null;
    weight: number | null;
    priority: number | null;
    draining: boolean | null;
    targets_down: string[] | null;
  }>(
    `SELECT a.id, a.created_at,
            min(c.connected_at) FILTER (WHERE c.last_seen_at > now() - make_interval(secs => :seen)) AS connected_at,
            max(c.last_seen_at) AS last_seen_at,
            array_agg(c.edge_address ORDER BY c.edge_address) FILTER (WHERE c.last_seen_at > now() - make_interval(secs => :seen)) AS edges,
            (array_agg(c.weight ORDER BY c.last_seen_at DESC) FILTER (WHERE c.last_seen_at > now() - make_interval(secs => :seen)))[1] AS weight,
            (array_agg(c.priority ORDER BY c.last_seen_at DESC) FILTER (WHERE c.last_seen_at > now() - make_interval(secs => :seen)))[1] AS priority,
            bool_or(c.draining) FILTER (WHERE c.last_seen_at > now() - make_interval(secs => :seen)) AS draining,
            (SELECT array_agg(DISTINCT d ORDER BY d) FROM agent_connections c2, unnest(c2.targets_down) AS d
              WHERE c2.agent_id = a.id AND c2.last_seen_at > now() - make_interval(secs => :seen)) AS targets_down
       FROM agents a LEFT JOIN agent_connections c ON c.agent_id = a.id
      WHERE a.hub_id = :hubId AND a.env_z_id = :envZId
      GROUP BY a.id, a.created_at ORDER BY a.created_at, a.id`,
    { replacements: { hubId, envZId, seen: AGENT_SEEN_MS / 1000 }, type: QueryTypes.SELECT },
  );
  return rows.map((r) => ({
    id: r.id,
    createdAt: r.created_at,
    connected: (r.edges ?? []).length > 0,
    connectedAt: r.connected_at,
    lastSeenAt: r.last_seen_at,
    edges: r.edges ?? [],
    weight: r.weight ?? 1,
    priority: r.priority ?? 0,
    draining: r.draining ?? false,
    targetsDown: r.targets_down ?? [],
  }));
}

/**
 * Revokes an agent: its row goes (the edges close its connections on the notification; its certificate admits
 * nothing) and, in the same transaction, its certificate is recorded revoked (cessationOfOperation); its CA's CRL is
 * asked for once that committed.
 */
export async function revokeAgent(hubId: string, envZId: string, agentId: string, revokedBy = 'api'): Promise<void> {
  const caId = await withTransaction(async (transaction) => {
    const rows = await db().query<{ id: string; serialNumber: string }>(
      `DELETE FROM agents WHERE id = :agentId AND hub_id = :hubId AND env_z_id = :envZId RETURNING id, serial_number AS "serialNumber"`,
      { replacements: { agentId, hubId, envZId }, type: QueryTypes.SELECT, transaction },
    );
    if (!rows.length) throw notFound('agent', agentId);
    return recordAgentRevocations(hubId, rows, REVOCATION_REASONS.cessationOfOperation, revokedBy, transaction);
  });
  if (caId) await requestCrlsQuietly([{ caId, hubId }], 'scheduler');
}
