import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { AsyncLocalStorage } from 'node:async_hooks';
import acme from 'acme-client';
import axios, { type AxiosAdapter } from 'axios';
import { egressPolicy } from '../egress.js';
import type { CertificateIssuer, IssuedCertificate } from './certificateIssuer.js';
import { ensureValidationResponder, type ValidationZone } from './dnsValidationZone.js';

/**
 * Custom frontend certificates from an ACME CA (RFC 8555) with acme-client: its client does the JWS, nonces, retries
 * on 429 and 5xx after the CA's Retry-After, polling and the CSR. What is set here is how it reaches the CA.
 */

export class AcmeError extends Error {}

/** The largest answer read from the CA (a certificate chain is a few KiB; a directory or an order less). */
export const ACME_MAX_BODY_BYTES = 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30_000;
/** acme-client retries a 429, a 5xx or a lost connection after the CA's Retry-After, else after attempt x this (s). */
const RETRY = { retryMaxAttempts: 3, retryDefaultDelay: 1 };
/** Polling an authorization or order: 0.5 s doubling to 10 s, 12 tries (about 90 s in all). */
const BACKOFF = { backoffAttempts: 12, backoffMin: 500, backoffMax: 10_000 };

let configured = false;

/** The last transport error of the issuance in progress (acme-client may lose it: see acmeFailure). */
const lastTransportError = new AsyncLocalStorage<{ error?: Error }>();

/**
 * acme-client's one axios instance, set once per process: every request of it through the egress policy (an IP
 * literal checked before, a name at its lookup for the request's port), the configured CA file trusted, no environment proxy, no redirect
 * (a redirect would leave the policy's check behind), bounded answers and a timeout.
 */
function configureHttp(caFile: string | undefined): void {
  if (configured) return;
  configured = true;
  const policy = egressPolicy();
  const ca = caFile ? readFileSync(caFile) : undefined;
  const defaults = acme.axios.defaults;
  // names are resolved by each request's own lookup for its port (set below)
  defaults.httpAgent = new http.Agent({ keepAlive: true });
  defaults.httpsAgent = new https.Agent({ keepAlive: true, ca });
  // axios's own http adapter, noting a failure for the issuance that made the request
  const adapter: AxiosAdapter = axios.getAdapter('http');
  defaults.adapter = (request) =>
    adapter(request).catch((err: Error) => {
      const store = lastTransportError.getStore();
      if (store) store.error = err;
      throw err;
    });
  defaults.proxy = false;
  defaults.maxRedirects = 0;
  defaults.maxContentLength = ACME_MAX_BODY_BYTES;
  defaults.maxBodyLength = ACME_MAX_BODY_BYTES;
  defaults.timeout = REQUEST_TIMEOUT_MS;
  defaults.headers.common['User-Agent'] = 'edgehub-acme/1';
  // acme-client's own settings on its axios instance (documented in its README; not in its types)
  Object.assign((defaults as unknown as { acmeSettings: Record<string, number> }).acmeSettings, RETRY);
  acme.axios.interceptors.request.use(async (request) => {
    await policy.ready();
    const url = new URL(request.url ?? '', request.baseURL);
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    policy.checkTarget(url.hostname, port);
    request.lookup = policy.lookupFor(port) as never;
    return request;
  });
}

/** Where the CA is and how it is trusted (HUB_ACME_DIRECTORY_URL, HUB_ACME_CA_FILE, HUB_ACME_CONTACT). */
export interface AcmeSettings {
  directoryUrl: string;
  caFile?: string;
  contact?: string;
}

/** The ACME account: its key (PKCS#8 PEM) and, once registered, its URL. The caller keeps it (the key sealed). */
export interface AcmeAccountKey {
  keyPem: string;
  accountUrl?: string;
}

/** A new account key (ECDSA P-256), for the caller to store before its first use. */
export const newAcmeAccountKey = (): string =>
  generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** One registered client per directory and account key in this process; newAccount with a known key finds the account. */
const clients = new Map<string, Promise<acme.Client>>();

function acmeClient(settings: AcmeSettings, account: AcmeAccountKey): Promise<acme.Client> {
  const key = `${settings.directoryUrl}\n${account.keyPem}`;
  let client = clients.get(key);
  if (!client) {
    client = (async () => {
      configureHttp(settings.caFile);
      const c = new acme.Client({ directoryUrl: settings.directoryUrl, accountKey: account.keyPem, accountUrl: account.accountUrl, ...BACKOFF });
      if (!account.accountUrl) await c.createAccount({ termsOfServiceAgreed: true, ...(settings.contact ? { contact: [`mailto:${settings.contact}`] } : {}) });
      return c;
    })();
    clients.set(key, client);
    client.catch(() => clients.delete(key));
  }
  return client;
}

/**
 * acme-client's errors (problem documents, axios errors) in one line. When its retries of an answer-less failure
 * (a lost connection, an answer over ACME_MAX_BODY_BYTES) run out, acme-client 5.4 throws a TypeError of its own
 * (`validateStatus` of no response) instead of the cause: that one is said in words.
 */
function acmeFailure(err: unknown, transport: Error | undefined): AcmeError {
  if (err instanceof AcmeError) return err;
  if (err instanceof TypeError && /acme-client[\\/]src[\\/]axios\.js/.test(err.stack ?? '')) {
    const cause = transport ? `${(transport as { code?: string }).code ?? ''} ${transport.message}`.trim() : 'the connection failed';
    return new AcmeError(`ACME: no usable answer from the CA after ${RETRY.retryMaxAttempts + 1} attempts (${cause})`);
  }
  const e = err as { message?: string; response?: { status?: number; config?: { url?: string } } };
  const where = e.response?.config?.url ? ` (${e.response.status ?? ''} from ${e.response.config.url})` : '';
  return new AcmeError(`ACME: ${e.message ?? String(err)}${where}`);
}

async function issueOnce(
  settings: AcmeSettings,
  account: AcmeAccountKey,
  zone: ValidationZone,
  { hostname, validationValue }: { hostname: string; validationValue: string },
): Promise<IssuedCertificate> {
  await ensureValidationResponder(zone);
  const published: string[] = [];
  try {
    const c = await acmeClient(settings, account);
    const order = await c.createOrder({ identifiers: [hostname, `*.${hostname}`].map((value) => ({ type: 'dns', value })) });
    const pending: acme.Authorization['challenges'] = [];
    for (const authorization of await c.getAuthorizations(order)) {
      if (authorization.status === 'valid') continue;
      const challenge = authorization.challenges.find((x) => x.type === 'dns-01');
      if (!challenge) throw new AcmeError(`ACME offers no dns-01 challenge for ${authorization.identifier.value}`);
      const txt = await c.getChallengeKeyAuthorization(challenge);
      await zone.publish(validationValue, txt);
      published.push(txt);
      pending.push(challenge);
    }
    for (const challenge of pending) await c.completeChallenge(challenge);
    for (const challenge of pending) await c.waitForValidStatus(challenge);
    const [privateKey, csr] = await acme.crypto.createCsr(
      { commonName: hostname, altNames: [hostname, `*.${hostname}`] },
      await acme.crypto.createPrivateEcdsaKey('P-256'),
    );
    const finalized = await c.finalizeOrder(order, csr);
    const chain = await c.getCertificate(finalized);
    return {
      certificatePem: chain,
      privateKeyPem: privateKey.toString(),
      notAfter: acme.crypto.readCertificateInfo(chain).notAfter,
      issuer: 'acme',
      accountUrl: c.getAccountUrl(),
    };
  } catch (err) {
    throw acmeFailure(err, lastTransportError.getStore()?.error);
  } finally {
    for (const txt of published) await zone.withdraw(validationValue, txt).catch(() => undefined);
  }
}

/**
 * Orders a certificate for the hostname and its share subdomains from the configured ACME directory, proving
 * control with DNS-01: the TXT values are published in the validation zone, at the name the owner's
 * `_acme-challenge.<hostname>` CNAME points to, and withdrawn afterwards. The account is registered on first use;
 * the result carries its URL for the caller to keep.
 */
export function acmeCertificateIssuer(settings: AcmeSettings, account: AcmeAccountKey, zone: ValidationZone): CertificateIssuer {
  return {
    name: 'acme',
    issue(input): Promise<IssuedCertificate> {
      return lastTransportError.run({}, () => issueOnce(settings, account, zone, input));
    },
  };
}
