import { webcrypto } from 'node:crypto';
import { CertificationRequest } from 'pkijs';
import { derToPem } from '../shared/pki/der.js';
import { buildName, OID } from '../shared/pki/names.js';

/** A PKCS#10 CSR for a fresh EC P-256 key, signed with it (as a device would make one), built with pkijs. */
export async function deviceCsr(commonName: string): Promise<string> {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  const request = new CertificationRequest({
    subject: buildName([
      [OID.commonName, commonName],
      [OID.organization, 'Bench'],
    ]),
  });
  await request.subjectPublicKeyInfo.importKey(keys.publicKey);
  await request.sign(keys.privateKey, 'SHA-256');
  return derToPem(request.toSchema(true).toBER(), 'CERTIFICATE REQUEST');
}
