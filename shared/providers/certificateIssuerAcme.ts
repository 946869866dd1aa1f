import 'reflect-metadata';
import { createHash, generateKeyPairSync, createPrivateKey, type KeyObject, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import * as x509 from '@peculiar/x509';
import { calculateJwkThumbprint, exportJWK, FlattenedSign, type JWK } from 'jose';
import { config } from '../config.js';
import { egressPolicy } from '../egress.js';
import { AcmeAccount } from '../models/AcmeAccount.js';
import { decryptSecret, encryptSecret } from '../secrets.js';
import type { CertificateIssuer, IssuedCertificate } from './certificateIssuer.js';
import { databaseValidationZone, ensureValidationResponder, type ValidationZone } from './dnsValidationZone.js';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

interface AcmeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface Directory {
  newNonce: string;
  newAccount: string;
  newOrder: string;
}

interface Order {
  status: string;
  authorizations: string[];
  finalize: string;
  certificate?: string;
  error?: { detail?: string };
}

interface Authorization {
  status: string;
  identifier: { value: string };
  challenges: { type: string; url: string; token: string; status: string; error?: { detail?: string } }[];
}

const POLL_MS = 500;
const POLL_LIMIT_MS = 90_000;
const b64url = (data: Buffer | Uint8Array) => Buffer.from(data).toString('base64url');

export class AcmeError extends Error {}

/** A minimal RFC 8555 client: ES256 account key, DNS-01 only. */
class AcmeClient {
  private nonce: string | undefined;
  private kid: string | undefined;
  private directory: Directory | undefined;
  private jwk: JWK | undefined;
  private thumbprint: string | undefined;

  constructor(
    private readonly directoryUrl: string,
    private readonly key: KeyObject,
    private readonly ca: Buffer | undefined,
    private readonly contact: string | undefined,
  ) {}

  private send(url: string, method: string, body?: string, headers: Record<string, string> = {}): Promise<AcmeResponse> {
    const target = new URL(url);
    const client = target.protocol === 'https:' ? https : http;
    // the CA's URLs (directory, nonce, orders, certificate) go through the egress policy like every other fetch
    const policy = egressPolicy();
    return new Promise((resolve, reject) => {
      try {
        policy.checkHost(target.hostname);
      } catch (err) {
        return reject(err);
      }
      const req = client.request(target, { method, headers: { 'user-agent': 'edgehub-acme/1', ...headers }, ca: this.ca, timeout: 30_000, lookup: policy.lookup as never }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new AcmeError(`ACME request to ${url} timed out`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async init(): Promise<void> {
    const res = await this.send(this.directoryUrl, 'GET');
    if (res.status !== 200) throw new AcmeError(`ACME directory ${this.directoryUrl} answered ${res.status}`);
    this.directory = JSON.parse(res.body.toString()) as Directory;
    this.jwk = await exportJWK(this.key);
    delete this.jwk.d;
    this.thumbprint = await calculateJwkThumbprint(this.jwk, 'sha256');
  }

  get accountThumbprint(): string {
    return this.thumbprint!;
  }

  get urls(): Directory {
    return this.directory!;
  }

  private async freshNonce(): Promise<string> {
    if (this.nonce) {
      const n = this.nonce;
      this.nonce = undefined;
      return n;
    }
    const res = await this.send(this.directory!.newNonce, 'HEAD');
    const nonce = res.headers['replay-nonce'];
    if (typeof nonce !== 'string') throw new AcmeError('ACME server gave no nonce');
    return nonce;
  }

  /** A JWS POST (payload undefined = POST-as-GET); a badNonce answer is retried with the nonce it carries. */
  async post<T>(url: string, payload: unknown, options: { useJwk?: boolean; accept?: string } = {}): Promise<{ body: T; text: string; location?: string }> {
    for (let attempt = 0; ; attempt++) {
      const nonce = await this.freshNonce();
      const header = { alg: 'ES256', nonce, url, ...(options.useJwk || !this.kid ? { jwk: this.jwk } : { kid: this.kid }) };
      const jws = await new FlattenedSign(new TextEncoder().encode(payload === undefined ? '' : JSON.stringify(payload)))
        .setProtectedHeader(header)
        .sign(this.key);
      const res = await this.send(url, 'POST', JSON.stringify(jws), {
        'content-type': 'application/jose+json',
        ...(options.accept ? { accept: options.accept } : {}),
      });
      const next = res.headers['replay-nonce'];
      if (typeof next === 'string') this.nonce = next;
      const text = res.body.toString();
      if (res.status >= 400) {
        let problem: { type?: string; detail?: string } = {};
        try {
          problem = JSON.parse(text);
        } catch {
          /* not a problem document */
        }
        if (problem.type === 'urn:ietf:params:acme:error:badNonce' && attempt < 5) continue;
        throw new AcmeError(`ACME ${url} answered ${res.status}: ${problem.detail ?? text.slice(0, 300)}`);
      }
      const location = typeof res.headers.location === 'string' ? res.headers.location : undefined;
      const isJson = String(res.headers['content-type'] ?? '').includes('json');
      return { body: (isJson && text ? JSON.parse(text) : undefined) as T, text, location };
    }
  }

  /** newAccount with the stored key returns the existing account, so this is safe on every start. */
  async register(): Promise<string> {
    const { location } = await this.post(this.directory!.newAccount, {
      termsOfServiceAgreed: true,
      ...(this.contact ? { contact: [`mailto:${this.contact}`] } : {}),
    }, { useJwk: true });
    if (!location) throw new AcmeError('ACME newAccount gave no account URL');
    this.kid = location;
    return location;
  }

  async poll<T extends { status: string }>(url: string, done: (body: T) => boolean): Promise<T> {
    const deadline = Date.now() + POLL_LIMIT_MS;
    for (;;) {
      const { body } = await this.post<T>(url, undefined);
      if (done(body)) return body;
      if (body.status === 'invalid') return body;
      if (Date.now() > deadline) throw new AcmeError(`ACME ${url} still ${body.status} after ${POLL_LIMIT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
}

async function accountKey(directoryUrl: string): Promise<KeyObject> {
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const [row] = await AcmeAccount.findOrCreate({ where: { directoryUrl }, defaults: { directoryUrl, accountUrl: null, privateKeySealed: encryptSecret(pem) } });
  return createPrivateKey(decryptSecret(row.privateKeySealed));
}

let client: Promise<AcmeClient> | undefined;

/** One registered client per process (the account key is shared through the database). */
function acmeClient(): Promise<AcmeClient> {
  const acme = config().acme;
  if (!acme) throw new AcmeError('no ACME directory configured (HUB_ACME_DIRECTORY_URL)');
  client ??= (async () => {
    const c = new AcmeClient(acme.directoryUrl, await accountKey(acme.directoryUrl), acme.caFile ? readFileSync(acme.caFile) : undefined, acme.contact);
    await c.init();
    const accountUrl = await c.register();
    await AcmeAccount.update({ accountUrl }, { where: { directoryUrl: acme.directoryUrl } });
    return c;
  })().catch((err) => {
    client = undefined;
    throw err;
  });
  return client;
}

async function certificateSigningRequest(hostname: string): Promise<{ der: Buffer; privateKeyPem: string }> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${hostname}`,
    keys,
    signingAlgorithm: algorithm,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: hostname }, { type: 'dns', value: `*.${hostname}` }])],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey as webcrypto.CryptoKey);
  const privateKeyPem = `-----BEGIN PRIVATE KEY-----\n${Buffer.from(pkcs8).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
  return { der: Buffer.from(csr.rawData), privateKeyPem };
}

/**
 * Orders a certificate for the hostname and its share subdomains from the configured ACME directory, proving
 * control with DNS-01: the TXT values are published in the validation zone, at the name the owner's
 * `_acme-challenge.<hostname>` CNAME points to, and withdrawn afterwards.
 */
export function acmeCertificateIssuer(zone: ValidationZone = databaseValidationZone): CertificateIssuer {
  return {
    name: 'acme',
    async issue({ hostname, validationValue }): Promise<IssuedCertificate> {
      await ensureValidationResponder();
      const acme = await acmeClient();
      const identifiers = [hostname, `*.${hostname}`].map((value) => ({ type: 'dns', value }));
      const created = await acme.post<Order>(acme.urls.newOrder, { identifiers });
      const orderUrl = created.location;
      if (!orderUrl) throw new AcmeError('ACME newOrder gave no order URL');
      const published: string[] = [];
      try {
        const pending: { authorization: string; challenge: string }[] = [];
        for (const url of created.body.authorizations) {
          const { body: authz } = await acme.post<Authorization>(url, undefined);
          if (authz.status === 'valid') continue;
          const challenge = authz.challenges.find((c) => c.type === 'dns-01');
          if (!challenge) throw new AcmeError(`ACME offers no dns-01 challenge for ${authz.identifier.value}`);
          const txt = b64url(createHash('sha256').update(`${challenge.token}.${acme.accountThumbprint}`).digest());
          await zone.publish(validationValue, txt);
          published.push(txt);
          pending.push({ authorization: url, challenge: challenge.url });
        }
        for (const p of pending) await acme.post(p.challenge, {});
        for (const p of pending) {
          const authz = await acme.poll<Authorization>(p.authorization, (a) => a.status === 'valid');
          if (authz.status !== 'valid') {
            const detail = authz.challenges.find((c) => c.error)?.error?.detail ?? authz.status;
            throw new AcmeError(`ACME validation of ${authz.identifier.value} failed: ${detail}`);
          }
        }
        const ready = await acme.poll<Order>(orderUrl, (o) => o.status === 'ready' || o.status === 'valid');
        if (ready.status === 'invalid') throw new AcmeError(`ACME order is invalid: ${ready.error?.detail ?? ''}`);
        const { der, privateKeyPem } = await certificateSigningRequest(hostname);
        if (ready.status === 'ready') await acme.post(ready.finalize, { csr: b64url(der) });
        const order = await acme.poll<Order>(orderUrl, (o) => o.status === 'valid' && Boolean(o.certificate));
        if (order.status !== 'valid' || !order.certificate) throw new AcmeError(`ACME order ended ${order.status}: ${order.error?.detail ?? ''}`);
        const { text: chain } = await acme.post(order.certificate, undefined, { accept: 'application/pem-certificate-chain' });
        const leaf = new x509.X509Certificate(chain.slice(0, chain.indexOf('-----END CERTIFICATE-----') + 25));
        return { certificatePem: chain, privateKeyPem, notAfter: leaf.notAfter, issuer: 'acme' };
      } finally {
        for (const txt of published) await zone.withdraw(validationValue, txt).catch(() => undefined);
      }
    },
  };
}
