/**
 * A self-signed P-256 certificate and its key, made by the openssl CLI into files (`<name>.crt`, `<name>.key` in
 * `dir`): an edge's operator certificate, an agent's, a client's to upload. Valid for two days.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface SelfSignedFiles {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

/** `subject` like `/CN=share.localhost`; `san` like `DNS:*.share.localhost,DNS:share.localhost`. */
export function selfSignedCertificate(dir: string, name: string, subject: string, san?: string): SelfSignedFiles {
  const certFile = path.join(dir, `${name}.crt`);
  const keyFile = path.join(dir, `${name}.key`);
  const args = ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2'];
  args.push('-keyout', keyFile, '-out', certFile, '-subj', subject, ...(san ? ['-addext', `subjectAltName=${san}`] : []));
  execFileSync('openssl', args, { stdio: 'ignore' });
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
}
