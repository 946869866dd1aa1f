/**
 * What the agent benches (bench:agent, bench:ipsec) set up besides the service: the agent's row listing its certificate by fingerprint
 * (all the edge checks of an agent), and its identity folder as `edgehub agent enroll` writes it.
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import type pg from 'pg';
import { writeIdentity } from '../agent/lib/identity.js';
import type { SelfSignedFiles } from '../test/helpers/selfSigned.js';

/** A certificate and its key, in PEM and in files (test/helpers/selfSigned.ts makes them). */
export type BenchCertificate = SelfSignedFiles;

/**
 * An agent of `envZId` whose certificate is `agent`, enrolled by writing its row straight into the database, and its
 * identity in `dir` (dialing `edges`, trusting `edgeCaPem`). Returns the agent's id.
 */
export async function benchAgent(
  db: pg.Client,
  options: { hubId: string; envZId: string; agent: BenchCertificate; edgeCaPem: string; edges: string[]; dir: string },
): Promise<string> {
  const id = `bench-agent-${randomBytes(3).toString('hex')}`;
  const x509 = new X509Certificate(options.agent.cert);
  await db.query(
    `INSERT INTO agents (id, hub_id, env_z_id, certificate_pem, fingerprint_sha256, serial_number, not_before, not_after, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'bench')`,
    [
      id,
      options.hubId,
      options.envZId,
      options.agent.cert,
      x509.fingerprint256.replaceAll(':', '').toLowerCase(),
      x509.serialNumber,
      new Date(x509.validFrom),
      new Date(x509.validTo),
    ],
  );
  // as the first enrollment does: the environment is reached only through its agents
  await db.query(`UPDATE environments SET reach = 'agent' WHERE hub_id = $1 AND env_z_id = $2`, [options.hubId, options.envZId]);
  writeIdentity(options.dir, {
    id,
    hubId: options.hubId,
    envZId: options.envZId,
    edges: options.edges,
    edgeServerName: 'agent.share.localhost',
    serviceUrl: '',
    keyPem: options.agent.key,
    certificatePem: options.agent.cert,
    edgeCaPem: options.edgeCaPem,
  });
  return id;
}
