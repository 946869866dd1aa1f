/**
 * The enrollment client: what a recipient of an enrollment JWT runs to get a client certificate.
 *
 * It verifies the JWT before it sends anything anywhere: the `url` claim must be on the expected host, then the
 * signature is checked by `kid` against the public key set at the url's origin, then `iss`, `aud` (the hub id in the
 * url) and `exp`. Then it makes a P-256 key and a CSR with the subject the claims require, enrolls, and writes
 * `<name>.crt` (certificate and the issuing chain) and `<name>.key` (mode 0600).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { keyAndCsr } from './csr.js';
import { EnrollError, oneLine } from './errors.js';
import { unverifiedClaims, verifiedClaims } from './jwt.js';

const HTTP_TIMEOUT_MS = 30_000;

/** @typedef {{ pattern: RegExp; shape: string }} Endpoint */
/** @type {Endpoint} */
const CERTIFICATE_ENDPOINT = { pattern: /^\/hub(?:\/v2)?\/([^/]+)\/client-certificates\/enroll\/?$/, shape: '/hub/v2/{hubId}/client-certificates/enroll' };

/**
 * The enrollment endpoint from the url claim, and the hub id its path names.
 * @param {Record<string, unknown>} claims
 * @param {Endpoint} [endpoint]
 * @returns {{ url: URL; hubId: string }}
 */
export function enrollmentEndpoint(claims, endpoint = CERTIFICATE_ENDPOINT) {
  if (typeof claims.url !== 'string') throw new EnrollError("refused: the JWT has no 'url' claim");
  let url;
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

/**
 * @param {URL} url
 * @param {string} expectHost host, or host:port
 */
export function checkHost(url, expectHost) {
  const expected = expectHost.trim().toLowerCase().replace(/\/+$/, '');
  // host:port compares with the port; a bare host compares the hostname only
  const actual = /:\d+$/.test(expected) ? url.host.toLowerCase() : url.hostname.toLowerCase();
  if (actual !== expected) throw new EnrollError(`refused: the JWT's enrollment url is on host '${url.host}', expected '${expectHost}'`);
}

/**
 * A file name from the `name` claim: letters, digits, dot, dash and underscore; anything else becomes `_`.
 * @param {string} name
 */
function safeFileName(name) {
  const cleaned = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  if (!cleaned) throw new EnrollError("refused: the JWT's 'name' claim is empty");
  return cleaned;
}

/**
 * A JSON POST; the status and the parsed answer (undefined when it is not JSON).
 * @param {URL} url
 * @param {unknown} body
 * @param {Record<string, string>} [headers]
 * @returns {Promise<{ status: number; json: any }>}
 */
export async function post(url, body, headers = {}) {
  let res;
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
  const { json } = await readJson(res);
  return { status: res.status, json };
}

/**
 * An answer's text and its JSON (undefined when it is empty or not JSON).
 * @param {Response} res
 * @returns {Promise<{ text: string; json: any }>}
 */
export async function readJson(res) {
  const text = await res.text();
  try {
    return { text, json: text ? JSON.parse(text) : undefined };
  } catch {
    return { text, json: undefined };
  }
}

/**
 * Writes the service's frontend CA (GET /hub/v2/public/frontend-ca.pem) to `frontend-ca.pem` in `out`, when it serves one.
 * @param {URL} url
 * @param {string} out
 * @returns {Promise<string | undefined>}
 */
async function writeFrontendCa(url, out) {
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

/**
 * @typedef {{ jwt: string; out?: string; expectHost?: string; validate?: boolean; log?: (line: string) => void }} EnrollOptions
 * @typedef {{ path: string; label: string; message: string }} Violation
 * @typedef {{ kind: 'enrolled'; certificateFile: string; keyFile: string; id: string; fingerprint?: string; caFile?: string } | { kind: 'validated'; violations: Violation[] }} EnrollResult
 */

/**
 * @param {EnrollOptions} options
 * @returns {Promise<EnrollResult>}
 */
export async function enroll(options) {
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
  if (typeof claims.name !== 'string' || !claims.name) throw new EnrollError("refused: the JWT has no 'name' claim");

  const out = path.resolve(options.out ?? '.');
  const base = safeFileName(claims.name);
  const certificateFile = path.join(out, `${base}.crt`);
  const keyFile = path.join(out, `${base}.key`);
  if (!options.validate) {
    // checked before enrolling: the JWT is good for one certificate, whose key must not be lost
    for (const f of [certificateFile, keyFile]) if (existsSync(f)) throw new EnrollError(`${f} already exists; remove it or choose another --out folder`);
  }

  const str = (/** @type {unknown} */ v) => (typeof v === 'string' && v ? v : undefined);
  const { keyPem, csrPem } = keyAndCsr({ cn: str(claims.cn) ?? claims.name, o: str(claims.o), ou: str(claims.ou) });
  if (options.validate) {
    const r = await post(url, { jwt, csr: csrPem }, { 'x-validate': 'true' });
    if (r.status !== 200 || !Array.isArray(r.json)) throw new EnrollError(`validation failed (${r.status}): ${r.json?.message ?? 'unexpected answer'}`);
    return { kind: 'validated', violations: r.json };
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
