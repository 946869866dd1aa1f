/**
 * The enrollment client: what a recipient of an enrollment JWT runs to get a client certificate.
 *
 * It verifies the JWT before it sends anything anywhere (SPEC.md, Authentication rule 5): the `url` claim must be
 * on the expected host, then the signature is checked by `kid` against the public key set at the url's origin
 * (jose re-reads the set on an unknown kid), then `iss`, `aud` (the hub id in the url) and `exp`. Then it makes a
 * P-256 key and a CSR with the subject the claims require, enrolls, and writes `<name>.crt` (certificate and the
 * issuing chain) and `<name>.key` (mode 0600).
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export const JWT_ISSUER = 'hub';
export const JWKS_PATH = '/hub/v2/public/.well-known/jwks.json';
const HTTP_TIMEOUT_MS = 30_000;

/** A refusal or failure: one line for the user. */
export class EnrollError extends Error {}

export interface EnrollOptions {
  jwt: string;
  /** Folder for <name>.crt and <name>.key (default: the current folder). */
  out?: string;
  /** Host (optionally host:port) the url claim must name; default: the url claim's own host, printed first. */
  expectHost?: string;
  /** Ask the validate-only form and print the violations instead of enrolling. */
  validate?: boolean;
  log?: (line: string) => void;
}

export interface EnrollmentClaims extends JWTPayload {
  url: string;
  name: string;
  cn?: string;
  o?: string;
  ou?: string;
}

export interface Violation {
  path: string;
  label: string;
  message: string;
}

export type EnrollResult = { kind: 'enrolled'; certificateFile: string; keyFile: string; id: string; fingerprint?: string; caFile?: string } | { kind: 'validated'; violations: Violation[] };

/** The claims as written, before any verification: only to learn where to verify them. */
export function unverifiedClaims(jwt: string): { kid: string; claims: JWTPayload } {
  let header: ReturnType<typeof decodeProtectedHeader>;
  let claims: JWTPayload;
  try {
    header = decodeProtectedHeader(jwt);
    claims = decodeJwt(jwt);
  } catch {
    throw new EnrollError('the argument is not a compact JWT (three base64url parts separated by dots)');
  }
  if (header.alg !== 'ES256') throw new EnrollError(`refused: the JWT must be signed with ES256 (it says ${String(header.alg)})`);
  if (typeof header.kid !== 'string' || !header.kid) throw new EnrollError('refused: the JWT header names no signing key (kid)');
  if (header.jku !== undefined || header.jwk !== undefined || header.x5u !== undefined) throw new EnrollError('refused: the JWT header must not name its own key (jku, jwk or x5u)');
  return { kid: header.kid, claims };
}

const CERTIFICATE_ENDPOINT = { pattern: /^\/hub(?:\/v2)?\/([^/]+)\/client-certificates\/enroll\/?$/, shape: '/hub/v2/{hubId}/client-certificates/enroll' };

/** The enrollment endpoint from the url claim, and the hub id its path names. */
export function enrollmentEndpoint(claims: JWTPayload, endpoint: { pattern: RegExp; shape: string } = CERTIFICATE_ENDPOINT): { url: URL; hubId: string } {
  if (typeof claims.url !== 'string') throw new EnrollError("refused: the JWT has no 'url' claim");
  let url: URL;
  try {
    url = new URL(claims.url);
  } catch {
    throw new EnrollError(`refused: the JWT's 'url' claim is not a URL: ${claims.url}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new EnrollError(`refused: the JWT's 'url' claim must be an http(s) URL: ${claims.url}`);
  const match = endpoint.pattern.exec(url.pathname);
  if (!match) throw new EnrollError(`refused: the JWT's 'url' claim is not an enrollment endpoint (${endpoint.shape}): ${claims.url}`);
  return { url, hubId: decodeURIComponent(match[1]) };
}

export function checkHost(url: URL, expectHost: string): void {
  const expected = expectHost.trim().toLowerCase().replace(/\/+$/, '');
  // host:port compares with the port; a bare host compares the hostname only
  const actual = /:\d+$/.test(expected) ? url.host.toLowerCase() : url.hostname.toLowerCase();
  if (actual !== expected) throw new EnrollError(`refused: the JWT's enrollment url is on host '${url.host}', expected '${expectHost}'`);
}

/** Signature by kid against the JWKS at the url's origin, then iss, aud and exp; `check` adds the claims a use needs. */
export async function verifiedClaims<T extends JWTPayload = EnrollmentClaims>(jwt: string, url: URL, hubId: string, check: (payload: JWTPayload) => void = requireName): Promise<T> {
  const jwksUrl = new URL(JWKS_PATH, url.origin);
  const jwks = createRemoteJWKSet(jwksUrl, { timeoutDuration: HTTP_TIMEOUT_MS, cooldownDuration: 0 });
  try {
    const { payload } = await jwtVerify(jwt, jwks, { algorithms: ['ES256'], issuer: JWT_ISSUER, audience: hubId, requiredClaims: ['exp', 'sub'] });
    check(payload);
    return payload as T;
  } catch (err) {
    if (err instanceof EnrollError) throw err;
    if (err instanceof errors.JWTExpired) throw new EnrollError(`refused: the JWT expired at ${new Date(Number(err.payload.exp) * 1000).toISOString()}`);
    if (err instanceof errors.JWTClaimValidationFailed) {
      if (err.claim === 'iss') throw new EnrollError(`refused: the JWT's issuer (iss) is '${String(err.payload.iss)}', expected '${JWT_ISSUER}'`);
      if (err.claim === 'aud') throw new EnrollError(`refused: the JWT's audience (aud) is '${String(err.payload.aud)}', expected the hub of its url, '${hubId}'`);
      throw new EnrollError(`refused: the JWT's '${err.claim}' claim is invalid (${err.reason})`);
    }
    if (err instanceof errors.JWSSignatureVerificationFailed) throw new EnrollError(`refused: the JWT's signature does not verify against the key set at ${jwksUrl.href}`);
    if (err instanceof errors.JWKSNoMatchingKey) throw new EnrollError(`refused: the JWT's signing key (kid) is not in the key set at ${jwksUrl.href}`);
    if (err instanceof errors.JWKSInvalid || err instanceof errors.JWKSTimeout || err instanceof errors.JOSEError) {
      throw new EnrollError(`could not verify the JWT against ${jwksUrl.href}: ${(err as Error).message}`);
    }
    throw new EnrollError(`could not read the key set at ${jwksUrl.href}: ${oneLine(err)}`);
  }
}

function requireName(payload: JWTPayload): void {
  if (typeof payload.name !== 'string' || !payload.name) throw new EnrollError("refused: the JWT has no 'name' claim");
}

export const oneLine = (err: unknown) => {
  const e = err as Error & { cause?: Error & { code?: string } };
  const detail = e.cause ? `${e.message} (${e.cause.code ?? e.cause.message})` : (e?.message ?? String(err));
  return detail.replace(/\s+/g, ' ').trim();
};

/** A file name from the `name` claim: letters, digits, dot, dash and underscore; anything else becomes `_`. */
export function safeFileName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  if (!cleaned) throw new EnrollError("refused: the JWT's 'name' claim is empty");
  return cleaned;
}

export const pemOf = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;

/** A fresh P-256 key and a CSR whose subject carries the claims' cn, o and ou (cn defaults to the name claim). */
export async function keyAndCsr(claims: EnrollmentClaims): Promise<{ keyPem: string; csrPem: string }> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const subject: Record<string, string[]>[] = [{ CN: [claims.cn ?? claims.name] }];
  if (claims.o) subject.push({ O: [claims.o] });
  if (claims.ou) subject.push({ OU: [claims.ou] });
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: new x509.Name(subject), keys, signingAlgorithm: algorithm });
  return { keyPem: pemOf('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)), csrPem: csr.toString('pem') + '\n' };
}

export async function post(url: URL, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
    });
  } catch (err) {
    throw new EnrollError(`could not reach ${url.href}: ${oneLine(err)}`);
  }
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

/** Writes the service's frontend CA (GET /hub/v2/public/frontend-ca.pem) to `frontend-ca.pem` in `out`, when it serves one. */
async function writeFrontendCa(url: URL, out: string): Promise<string | undefined> {
  try {
    const res = await fetch(new URL('/hub/v2/public/frontend-ca.pem', url.origin), { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
    const pem = await res.text();
    if (!res.ok || !pem.includes('BEGIN CERTIFICATE')) return undefined;
    const file = path.join(out, 'frontend-ca.pem');
    writeFileSync(file, pem, { mode: 0o644 });
    return file;
  } catch {
    return undefined;
  }
}

export async function enroll(options: EnrollOptions): Promise<EnrollResult> {
  const log = options.log ?? (() => undefined);
  const jwt = options.jwt.trim();
  const { claims: unverified } = unverifiedClaims(jwt);
  const { url, hubId } = enrollmentEndpoint(unverified);
  if (options.expectHost) checkHost(url, options.expectHost);
  else log(`enrollment endpoint: ${url.href} (host ${url.host}; pass --expect-host to require a host)`);
  if (url.protocol === 'http:' && !/^(localhost|.*\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(url.hostname)) {
    log(`warning: ${url.origin} is plain http: the JWT and the certificate travel unencrypted`);
  }
  const claims = await verifiedClaims(jwt, url, hubId);

  const out = path.resolve(options.out ?? '.');
  const base = safeFileName(claims.name);
  const certificateFile = path.join(out, `${base}.crt`);
  const keyFile = path.join(out, `${base}.key`);
  if (!options.validate) {
    // checked before enrolling: the JWT is good for one certificate, whose key must not be lost
    for (const f of [certificateFile, keyFile]) if (existsSync(f)) throw new EnrollError(`${f} already exists; remove it or choose another --out folder`);
  }

  const { keyPem, csrPem } = await keyAndCsr(claims);
  if (options.validate) {
    const r = await post(url, { jwt, csr: csrPem }, { 'x-validate': 'true' });
    if (r.status !== 200 || !Array.isArray(r.json)) throw new EnrollError(`validation failed (${r.status}): ${r.json?.message ?? 'unexpected answer'}`);
    return { kind: 'validated', violations: r.json as Violation[] };
  }
  const r = await post(url, { jwt, csr: csrPem });
  if (r.status !== 201 && r.status !== 200) throw new EnrollError(`enrollment refused (${r.status}): ${r.json?.message ?? r.json?.error ?? 'no reason given'}`);
  if (typeof r.json?.value !== 'string') throw new EnrollError('enrollment answered without a certificate');
  const chain = typeof r.json.chain === 'string' ? r.json.chain : '';
  mkdirSync(out, { recursive: true });
  writeFileSync(keyFile, keyPem, { mode: 0o600, flag: 'wx' });
  const certificate = r.json.value.endsWith('\n') ? r.json.value : r.json.value + '\n';
  writeFileSync(certificateFile, certificate + chain, { mode: 0o644, flag: 'wx' });
  // the CA of the edge's certificates, so that `curl --cacert` reaches https:// shares without -k
  const caFile = await writeFrontendCa(url, out);
  return { kind: 'enrolled', certificateFile, keyFile, id: r.json.id, fingerprint: r.json.fingerprintSha256, caFile };
}
