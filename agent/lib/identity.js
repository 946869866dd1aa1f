/**
 * An agent's identity on disk (`edgehub agent enroll` writes it, `edgehub agent run` and `edgehub share` read it):
 * - agent.key: its P-256 private key (mode 0600, made on this machine, never sent anywhere);
 * - agent.crt: its certificate with the hub's issuing chain;
 * - edge-ca.pem: the CA that signs the edges' certificates (empty: the system's trusted roots);
 * - agent.json: its id, hub, environment, the edge addresses to dial, the TLS name to ask them for, the service URL.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EnrollError } from './errors.js';
import { settleRenewal } from './renew.js';

/**
 * @typedef {object} AgentIdentity
 * @property {string} id
 * @property {string} hubId
 * @property {string} envZId
 * @property {string[]} edges
 * @property {string} edgeServerName
 * @property {string} serviceUrl The service's base URL (where the enrollment went).
 * @property {string} keyPem
 * @property {string} certificatePem
 * @property {string} edgeCaPem
 */

/**
 * `~/.edgehub/agent`. Without HOME (a service, `env -i`) there is no home to speak of: os.homedir() would fall back
 * to the passwd entry (`/root` for root) and the identity would land somewhere nobody chose, so --dir is asked for.
 * @param {NodeJS.ProcessEnv} [env]
 */
export function defaultAgentDir(env = process.env) {
  if (!env.HOME)
    throw new EnrollError(
      'HOME is not set, so there is no default folder for the agent identity: pass --dir <folder> (for a service, e.g. --dir /var/lib/edgehub/agent)',
    );
  return path.join(env.HOME, '.edgehub', 'agent');
}

/**
 * When the agent's certificate (the first of agent.crt) stops being valid, in ms since the epoch.
 * @param {AgentIdentity} identity
 */
export function certificateExpiry(identity) {
  return Date.parse(new X509Certificate(identity.certificatePem).validTo);
}

const FILES = { key: 'agent.key', certificate: 'agent.crt', edgeCa: 'edge-ca.pem', meta: 'agent.json' };

/** @param {string} dir */
export function identityExists(dir) {
  return existsSync(path.join(dir, FILES.meta)) || existsSync(path.join(dir, FILES.key));
}

/**
 * @param {string} dir
 * @param {AgentIdentity} identity
 */
export function writeIdentity(dir, identity) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // the key first, exclusively: an identity is never overwritten (its key would be lost)
  writeFileSync(path.join(dir, FILES.key), identity.keyPem, { mode: 0o600, flag: 'wx' });
  writeFileSync(path.join(dir, FILES.certificate), identity.certificatePem, { mode: 0o644 });
  writeFileSync(path.join(dir, FILES.edgeCa), identity.edgeCaPem, { mode: 0o644 });
  const { keyPem: _k, certificatePem: _c, edgeCaPem: _e, ...meta } = identity;
  writeFileSync(path.join(dir, FILES.meta), JSON.stringify(meta, null, 2) + '\n', { mode: 0o644 });
}

/** Removes an identity's files (a first `edgehub share` that failed after enrolling: its agent was revoked). @param {string} dir */
export function removeIdentity(dir) {
  for (const name of Object.values(FILES)) rmSync(path.join(dir, name), { force: true });
}

/**
 * @param {string} dir
 * @returns {AgentIdentity}
 */
export function readIdentity(dir) {
  settleRenewal(dir);
  /** @param {string} name */
  const read = (name) => {
    try {
      return readFileSync(path.join(dir, name), 'utf8');
    } catch (err) {
      const code = /** @type {NodeJS.ErrnoException} */ (err).code;
      throw new EnrollError(
        code === 'ENOENT'
          ? `no agent identity in ${dir} (${name} is missing): run edgehub agent enroll <jwt> first`
          : `cannot read ${path.join(dir, name)}: ${code ?? /** @type {Error} */ (err).message}`,
      );
    }
  };
  /** @type {Partial<AgentIdentity>} */
  let meta;
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
