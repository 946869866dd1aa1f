/**
 * `edgehub agent enroll <jwt>`: verifies the agent enrollment JWT as the certificate enrollment client does (url on
 * the expected host, signature by kid against the service's key set, iss, aud, exp; `env` and `kind: agent`),
 * makes a P-256 key and a CSR, enrolls, and writes the identity (scripts/cli/agent/identity.ts). The key never leaves
 * this machine; the JWT is spent.
 */
import path from 'node:path';
import type { JWTPayload } from 'jose';
import { checkHost, EnrollError, enrollmentEndpoint, keyAndCsr, post, unverifiedClaims, verifiedClaims, type EnrollmentClaims } from '../enroll.js';
import { defaultAgentDir, identityExists, writeIdentity, type AgentIdentity } from './identity.js';

const AGENT_ENDPOINT = { pattern: /^\/hub(?:\/v2)?\/([^/]+)\/agents\/enroll\/?$/, shape: '/hub/v2/{hubId}/agents/enroll' };

export interface AgentEnrollOptions {
  jwt: string;
  dir?: string;
  expectHost?: string;
  log?: (line: string) => void;
}

function requireAgentClaims(payload: JWTPayload): void {
  if (payload.kind !== 'agent') throw new EnrollError('refused: this JWT is not an agent enrollment JWT (kind is not "agent")');
  if (typeof payload.env !== 'string' || !payload.env) throw new EnrollError("refused: the JWT has no 'env' claim");
}

export async function agentEnroll(options: AgentEnrollOptions): Promise<AgentIdentity & { dir: string }> {
  const log = options.log ?? (() => undefined);
  const jwt = options.jwt.trim();
  const dir = path.resolve(options.dir ?? defaultAgentDir());
  const { claims: unverified } = unverifiedClaims(jwt);
  const { url, hubId } = enrollmentEndpoint(unverified, AGENT_ENDPOINT);
  if (options.expectHost) checkHost(url, options.expectHost);
  else log(`enrollment endpoint: ${url.href} (host ${url.host}; pass --expect-host to require a host)`);
  const claims = await verifiedClaims<JWTPayload & { env: string }>(jwt, url, hubId, requireAgentClaims);
  if (identityExists(dir)) throw new EnrollError(`${dir} already holds an agent identity; remove it or choose another --dir`);

  const { keyPem, csrPem } = await keyAndCsr({ name: `agent of ${claims.env}` } as EnrollmentClaims);
  const r = await post(url, { jwt, csr: csrPem });
  if (r.status !== 201) throw new EnrollError(`enrollment refused (${r.status}): ${r.json?.message ?? r.json?.error ?? 'no reason given'}`);
  const body = r.json ?? {};
  if (typeof body.certificate !== 'string' || typeof body.id !== 'string') throw new EnrollError('enrollment answered without a certificate');
  const identity: AgentIdentity = {
    id: body.id,
    hubId: String(body.hubId ?? hubId),
    envZId: String(body.envZId ?? claims.env),
    edges: Array.isArray(body.edges) ? body.edges.map(String) : [],
    edgeServerName: String(body.edgeServerName ?? ''),
    serviceUrl: url.origin,
    keyPem,
    certificatePem: body.certificate,
    edgeCaPem: typeof body.edgeCa === 'string' ? body.edgeCa : '',
  };
  writeIdentity(dir, identity);
  return { ...identity, dir };
}
