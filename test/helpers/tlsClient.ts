/**
 * Test helpers for mutual TLS: client keys and CSRs (openssl), self-signed certificates with chosen validity
 * (@peculiar/x509 on node's WebCrypto, for expired and not-yet-valid uploads), a server certificate for a test TLS
 * listener, and HTTPS requests with a client certificate through node's https client and through curl.
 */
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);
const run = promisify(execFile);
const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'tls-'));
let counter = 0;
export const tempFile = (ext: string, content?: string) => {
  const f = path.join(dir, `f${++counter}.${ext}`);
  if (content !== undefined) writeFileSync(f, content, { mode: 0o600 });
  return f;
};

export interface KeyAndCsr {
  keyPem: string;
  csrPem: string;
}

/** A P-256 key and a CSR for it with subject like `/CN=a/O=b`. */
export async function keyAndCsr(subject: string): Promise<KeyAndCsr> {
  const keyFile = tempFile('key');
  await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile]);
  const { stdout: csrPem } = await run('openssl', ['req', '-new', '-key', keyFile, '-subj', subject]);
  const { stdout: keyPem } = await run('openssl', ['pkey', '-in', keyFile]);
  return { keyPem, csrPem };
}

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END ${label}-----\n`;

/** A self-signed P-256 certificate and its key, valid from `notBefore` to `notAfter`. */
export async function selfSigned(
  commonName: string,
  notBefore: Date,
  notAfter: Date,
  extensions: x509.Extension[] = [],
): Promise<{ certPem: string; keyPem: string }> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(12)))
      .toString('hex')
      .replace(/^./, '4'),
    name: `CN=${commonName}`,
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: alg,
    extensions,
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)) };
}

/** A server certificate for `*.share.localhost`, `localhost` and 127.0.0.1 (self-signed; clients skip verification). */
export async function serverCertificate(): Promise<{ cert: string; key: string }> {
  const ext = [
    new x509.SubjectAlternativeNameExtension([
      { type: 'dns', value: 'localhost' },
      { type: 'dns', value: '*.share.localhost' },
      { type: 'ip', value: '127.0.0.1' },
    ]),
  ];
  const { certPem, keyPem } = await selfSigned('localhost', new Date(Date.now() - 3600_000), new Date(Date.now() + 86400_000), ext);
  return { cert: certPem, key: keyPem };
}

export interface TlsAnswer {
  status: number;
  headers: import('node:http').IncomingHttpHeaders;
  body: string;
  json: any;
  reused: boolean;
}

/** One HTTPS request with an optional client key and certificate (node's https client; server not verified). */
export function httpsRequest(
  url: string,
  options: { cert?: string; key?: string; agent?: https.Agent; headers?: Record<string, string>; servername?: string } = {},
): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        cert: options.cert,
        key: options.key,
        rejectUnauthorized: false,
        agent: options.agent ?? false,
        headers: options.headers,
        servername: options.servername,
      },
      (res) => {
        const reused = (res.socket as import('node:tls').TLSSocket | null)?.isSessionReused?.() ?? false;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = JSON.parse(body);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json, reused });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The same request through curl (`--cert`/`--key` files, `-k`); `resolve` maps host:port to 127.0.0.1. */
export async function curlRequest(
  url: string,
  options: { certFile?: string; keyFile?: string; resolve?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, string[]>; body: string; json: any }> {
  const args = ['-sS', '-k', '-o', '-', '-w', '\n%{http_code}\n%{header_json}'];
  if (options.certFile) args.push('--cert', options.certFile);
  if (options.keyFile) args.push('--key', options.keyFile);
  if (options.resolve) args.push('--resolve', options.resolve);
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(url);
  const { stdout: out } = await run('curl', args);
  // the body, then a line with the status, then the answer's header fields as JSON (names in lower case)
  const headersAt = out.lastIndexOf('\n{');
  const headers = JSON.parse(out.slice(headersAt + 1)) as Record<string, string[]>;
  const stdout = out.slice(0, headersAt);
  const at = stdout.lastIndexOf('\n');
  const body = stdout.slice(0, at);
  let json: any;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: Number(stdout.slice(at + 1)), headers, body, json };
}
