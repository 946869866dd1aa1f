/**
 * `edgehub agent enroll <jwt>`: verifies the agent enrollment JWT as the certificate enrollment client does (url on
 * the expected host, signature by kid against the service's key set, iss, aud, exp; `env` and `kind: agent`),
 * makes a P-256 key and a CSR, enrolls, and writes the identity (identity.js). The key never leaves this machine;
 * the JWT is spent.
 */
import path from 'node:path';
import { keyAndCsr } from './csr.js';
import { checkHost, enrollmentEndpoint, post } from './enroll.js';
import { EnrollError } from './errors.js';
import { defaultAgentDir, identityExists, writeIdentity } from './identity.js';
import { unverifiedClaims, verifiedClaims } from './jwt.js';

const AGENT_ENDPOINT = { pattern: /^\/hub(?:\/v2)?\/([^/]+)\/agents\/enroll\/?$/, shape: '/hub/v2/{hubId}/agents/enroll' };

/**
 * @param {{ jwt: string; dir?: string; expectHost?: string; log?: (line: string) => void }} options
 * @returns {Promise<import('./identity.js').AgentIdentity & { dir: string }>}
 */
export async function agentEnroll(options) {
  const log = options.log ?? (() => undefined);
  const jwt = options.jwt.trim();
  const dir = path.resolve(options.dir ?? defaultAgentDir());
  const { claims: unverified } = unverifiedClaims(jwt);
  const { url, hubId } = enrollmentEndpoint(unverified, AGENT_ENDPOINT);
  if (options.expectHost) checkHost(url, options.expectHost);
  else log(`enrollment endpoint: ${url.href} (host ${url.host}; pass --expect-host to require a host)`);
  const claims = await verifiedClaims(jwt, url, hubId);
  if (claims.kind !== 'agent') throw new EnrollError('refused: this JWT is not an agent enrollment JWT (kind is not "agent")');
  if (typeof claims.env !== 'string' || !claims.env) throw new EnrollError("refused: the JWT has no 'env' claim");
  if (identityExists(dir)) throw new EnrollError(`${dir} already holds an agent identity; remove it or choose another --dir`);

  const { keyPem, csrPem } = keyAndCsr({ cn: `agent of ${claims.env}` });
  const r = await post(url, { jwt, csr: csrPem });
  if (r.status !== 201) throw new EnrollError(`enrollment refused (${r.status}): ${r.json?.message ?? r.json?.error ?? 'no reason given'}`);
  const body = r.json ?? {};
  if (typeof body.certificate !== 'string' || typeof body.id !== 'string') throw new EnrollError('enrollment answered without a certificate');
  /** @type {import('./identity.js').AgentIdentity} */
  const identity = {
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
