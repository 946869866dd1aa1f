/**
 * An agent's identity on disk (`edgehub agent enroll` writes it, `edgehub agent run` and `edgehub share` read it):
 * - agent.key: its P-256 private key (mode 0600, made on this machine, never sent anywhere);
 * - agent.crt: its certificate with the hub's issuing chain;
 * - edge-ca.pem: the CA that signs the edges' certificates (empty: the system's trusted roots);
 * - agent.json: its id, hub, environment, the edge addresses to dial, the TLS name to ask them for, the service URL.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { EnrollError } from '../enroll.js';

export interface AgentIdentity {
  id: string;
  hubId: string;
  envZId: string;
  edges: string[];
  edgeServerName: string;
  /** The service's base URL (where the enrollment went). */
  serviceUrl: string;
  keyPem: string;
  certificatePem: string;
  edgeCaPem: string;
}

export const defaultAgentDir = () => path.join(homedir(), '.edgehub', 'agent');

const FILES = { key: 'agent.key', certificate: 'agent.crt', edgeCa: 'edge-ca.pem', meta: 'agent.json' } as const;

export function identityExists(dir: string): boolean {
  return existsSync(path.join(dir, FILES.meta)) || existsSync(path.join(dir, FILES.key));
}

export function writeIdentity(dir: string, identity: AgentIdentity): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // the key first, exclusively: an identity is never overwritten (its key would be lost)
  writeFileSync(path.join(dir, FILES.key), identity.keyPem, { mode: 0o600, flag: 'wx' });
  writeFileSync(path.join(dir, FILES.certificate), identity.certificatePem, { mode: 0o644 });
  writeFileSync(path.join(dir, FILES.edgeCa), identity.edgeCaPem, { mode: 0o644 });
  const { keyPem: _k, certificatePem: _c, edgeCaPem: _e, ...meta } = identity;
  writeFileSync(path.join(dir, FILES.meta), JSON.stringify(meta, null, 2) + '\n', { mode: 0o644 });
}

export function readIdentity(dir: string): AgentIdentity {
  const read = (name: string) => {
    try {
      return readFileSync(path.join(dir, name), 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new EnrollError(
        code === 'ENOENT' ? `no agent identity in ${dir} (${name} is missing): run edgehub agent enroll <jwt> first` : `cannot read ${path.join(dir, name)}: ${code ?? (err as Error).message}`,
      );
    }
  };
  let meta: Partial<AgentIdentity>;
  try {
    meta = JSON.parse(read(FILES.meta));
  } catch (err) {
    if (err instanceof EnrollError) throw err;
    throw new EnrollError(`${path.join(dir, FILES.meta)} is not valid JSON`);
  }
  if (typeof meta.id !== 'string' || typeof meta.hubId !== 'string' || typeof meta.envZId !== 'string' || !Array.isArray(meta.edges)) {
    throw new EnrollError(`${path.join(dir, FILES.meta)} lacks id, hubId, envZId or edges`);
  }
  return {
    id: meta.id,
    hubId: meta.hubId,
    envZId: meta.envZId,
    edges: meta.edges.map(String),
    edgeServerName: String(meta.edgeServerName ?? ''),
    serviceUrl: String(meta.serviceUrl ?? ''),
    keyPem: read(FILES.key),
    certificatePem: read(FILES.certificate),
    edgeCaPem: read(FILES.edgeCa),
  };
}
