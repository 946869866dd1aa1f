/** Agent identity folders written by hand for tests of the agent's files: a certificate of chosen key and validity. */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Certificate } from 'pkijs';
import { certificatePem, issueCertificate, publicKeyInfo } from '../../shared/pki/certificates.js';
import { makeSelfSigned } from './pki.js';

export const newAgentKey = (): KeyObject => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
export const pemOfKey = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }) as string;

/** A certificate of `key`'s public key, valid from `notBefore` to `notAfter` (signed by a throw-away issuer). */
export async function certificateOf(key: KeyObject, notBefore: Date, notAfter: Date): Promise<string> {
  const named = Certificate.fromBER(Buffer.from((await makeSelfSigned('/CN=agent-test')).replace(/-----[^-]+-----|\s/g, ''), 'base64'));
  const issued = await issueCertificate({
    subject: named.subject,
    publicKey: publicKeyInfo(createPublicKey(key).export({ type: 'spki', format: 'der' })),
    issuer: { name: named.subject, privateKey: newAgentKey(), keyIdentifier: Buffer.alloc(20, 1) },
    notBefore,
    notAfter,
    profile: { kind: 'client' },
  });
  return certificatePem(issued.der);
}

/** An identity folder (agent-1 of env1 in hub-1) whose agent.crt certifies `key` (a new one when not given). */
export async function writeAgentIdentity(notBefore: Date, notAfter: Date, key = newAgentKey()): Promise<string> {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-identity-'));
  writeFileSync(path.join(dir, 'agent.key'), pemOfKey(key), { mode: 0o600 });
  writeFileSync(path.join(dir, 'agent.crt'), await certificateOf(key, notBefore, notAfter));
  writeFileSync(path.join(dir, 'edge-ca.pem'), '');
  const meta = { id: 'agent-1', hubId: 'hub-1', envZId: 'env1', edges: ['127.0.0.1:9'], edgeServerName: '', serviceUrl: 'http://127.0.0.1:9' };
  writeFileSync(path.join(dir, 'agent.json'), JSON.stringify(meta));
  return dir;
}
