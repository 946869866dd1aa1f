/**
 * `edgehub share <target>`: the one-liner (zrok's `zrok share`, ngrok's `ngrok http`). With EDGEHUB_URL (the
 * service) and EDGEHUB_API_KEY (a hub's API key) it finds the key's hub, enrolls this machine as an agent of an
 * environment of its own when --dir holds no identity yet (reach "agent": its targets are reached only through this
 * machine), creates the share (or, with --name, finds the reserved share of that name), prints its public address,
 * serves it through the agent, and deletes the share on Ctrl-C unless it is reserved.
 *
 * Everything it can check is checked before it creates anything (the key, the frontends, the login provider); a
 * first run that fails after that undoes what it made (the share, the client certificate, the agent and its
 * environment, the identity files), so a failed try leaves nothing behind.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { agentEnroll } from './agentEnroll.js';
import { enroll, readJson } from './enroll.js';
import { EnrollError, oneLine } from './errors.js';
import { identityExists, readIdentity, removeIdentity } from './identity.js';
import { parseAllowPattern, parseAuthority, targetAuthority } from './protocol.js';
import { AgentRunner } from './run.js';

/**
 * The host a TCP client dials for a share's endpoint. A TCP share is found by its port alone, and a name under
 * `.localhost` (a local service's frontends) is loopback by definition (RFC 6761) but not answered by every system
 * resolver (glibc without nss-myhostname: `nc` and `openssl` fail on it), so the line printed names `localhost`.
 * @param {string} hostname
 */
const dialHost = (hostname) => (hostname === 'localhost' || hostname.endsWith('.localhost') ? 'localhost' : hostname);
/**
 * @typedef {object} ShareOptions
 * @property {string} target
 * @property {string} dir
 * @property {string} [name] A reserved share: found again by this name on every run, kept on Ctrl-C.
 * @property {string[]} [frontends]
 * @property {boolean} [mtls]
 * @property {string} [login] An auth provider id of the hub.
 * @property {string[]} [emails] Email domain patterns (`*@example.com` or `example.com`) a login must match.
 * @property {boolean} [tcp]
 * @property {boolean} [inspect]
 * @property {string[]} [allow] CIDRs the share admits clients from (its policy's ipAllow).
 * @property {string} [rate] N/WINDOW: at most N requests per client address per WINDOW (its policy's rateLimit).
 * @property {string[]} [basicAuth] USER:PASS: users admitted by HTTP Basic credentials (its policy's basicAuth).
 * @property {string[]} [edges] Edge addresses instead of the identity's.
 * @property {NodeJS.ProcessEnv} env
 * @property {(line: string) => void} log
 * @property {Promise<void>} until Resolves when the share must end (Ctrl-C).
 */

/**
 * `3000`, `localhost:3000` and `http://localhost:3000` all mean http://localhost:3000; with `tcp`, `5432`,
 * `db:5432` and `tcp://db:5432` mean tcp://db:5432.
 * @param {string} text
 * @param {boolean} [tcp]
 * @returns {URL}
 */
function targetUrl(text, tcp = false) {
  const t = text.trim();
  const scheme = tcp ? 'tcp' : 'http';
  const withScheme = /^\d{1,5}$/.test(t) ? `${scheme}://localhost:${t}` : /^[a-z][a-z0-9+.-]*:\/\//i.test(t) ? t : `${scheme}://${t}`;
  let url;
  try {
    url = new URL(withScheme);
  } catch {
    throw new EnrollError(`'${text}' is not a target: give a URL such as ${tcp ? 'tcp://localhost:5432' : 'http://localhost:3000'}, a host:port or a port`);
  }
  if (tcp) {
    if (url.protocol !== 'tcp:' || !url.hostname || !url.port || (url.pathname && url.pathname !== '/' && url.pathname !== ''))
      throw new EnrollError(`'${text}': a TCP target is tcp://HOST:PORT`);
    return url;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EnrollError(`'${text}': the target must be an http or https URL (or use --tcp)`);
  return url;
}

/** `*@example.com`, `@example.com` and `example.com` are the email domain example.com. @param {string} pattern */
function emailDomain(pattern) {
  const domain = pattern.trim().replace(/^\*?@/, '').toLowerCase();
  if (!/^(?!-)[a-z0-9-]{1,63}(\.(?!-)[a-z0-9-]{1,63})+$/.test(domain)) {
    throw new EnrollError(`--email '${pattern}': give a domain pattern such as *@example.com (single addresses belong in the auth provider's emailPatterns)`);
  }
  return domain;
}

/**
 * `100/PT1M`, `100/1m`, `100/m`: N requests per window, the window an ISO 8601 duration or a number (default 1) of
 * s, m, h or d; as the policy's rateLimit.
 * @param {string} text
 */
function rateLimit(text) {
  const m = /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(text);
  const unit = m && /^(\d*)([smhd])$/i.exec(m[2]);
  const per = !m
    ? undefined
    : /^P/i.test(m[2])
      ? m[2].toUpperCase()
      : unit
        ? `${unit[2].toLowerCase() === 'd' ? 'P' : 'PT'}${unit[1] || '1'}${unit[2].toUpperCase()}`
        : undefined;
  if (!m || !per || Number(m[1]) < 1)
    throw new EnrollError(`--rate '${text}': give N/WINDOW, N at least 1 and WINDOW an ISO 8601 duration or a number of s, m, h or d (100/PT1M, 100/1m)`);
  return { requests: Number(m[1]), per };
}

/**
 * The share's policy from --allow, --rate and --basic-auth, or undefined without them. The service checks each value
 * (a bad CIDR is its 400 naming it).
 * @param {Pick<ShareOptions, 'allow' | 'rate' | 'basicAuth' | 'tcp'>} options
 */
function policyOf(options) {
  /** @type {Record<string, unknown>} */
  const policy = {};
  if (options.allow?.length) policy.ipAllow = options.allow.map((c) => c.trim());
  if (options.rate !== undefined) policy.rateLimit = rateLimit(options.rate);
  if (options.basicAuth?.length) {
    policy.basicAuth = options.basicAuth.map((pair) => {
      const colon = pair.indexOf(':');
      if (colon < 1 || colon === pair.length - 1) throw new EnrollError(`--basic-auth: give USER:PASS (the password after the first colon)`);
      return { user: pair.slice(0, colon), password: pair.slice(colon + 1) };
    });
  }
  if (options.tcp && (policy.rateLimit || policy.basicAuth))
    throw new EnrollError('--rate and --basic-auth apply to HTTP shares, not --tcp (a TCP share takes --allow)');
  return Object.keys(policy).length ? policy : undefined;
}

class Api {
  /**
   * @param {string} base
   * @param {string} key
   */
  constructor(base, key) {
    this.base = base;
    this.key = key;
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @returns {Promise<any>}
   */
  async call(method, path, body) {
    let res;
    try {
      res = await fetch(new URL(path, this.base), {
        method,
        headers: { authorization: `Bearer ${this.key}`, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new EnrollError(`could not reach the service at ${this.base} (${oneLine(err)}): check EDGEHUB_URL`);
    }
    const { text, json } = await readJson(res);
    if (res.status === 401) throw new EnrollError(`the service refused EDGEHUB_API_KEY (401: ${json?.message ?? text}): set it to an API key of your hub`);
    if (!res.ok) throw new EnrollError(`${method} ${path} answered ${res.status}: ${json?.message ?? text}`);
    return json;
  }
}

/**
 * The client certificate `--mtls` prints a curl line with: enrolled once into DIR/client (a certificate request
 * token of the hub, redeemed by the enrollment client), reused on later runs.
 * @param {Api} api
 * @param {string} hub
 * @param {string} dir
 * @param {string} expectHost
 * @returns {Promise<{ cert: string; key: string; ca: string | undefined; id?: string; made: boolean }>}
 */
async function clientCertificate(api, hub, dir, expectHost) {
  const folder = path.join(dir, 'client');
  const meta = path.join(folder, 'client.json');
  if (existsSync(meta)) {
    const known = JSON.parse(readFileSync(meta, 'utf8'));
    if (existsSync(known.cert) && existsSync(known.key)) return { ...known, made: false };
  }
  const name = `edgehub-share-${randomBytes(4).toString('hex')}`;
  const token = await api.call('POST', `${hub}/certificate-request-tokens`, { name, ttl: 'PT10M' });
  const jwt = await api.call('GET', `${hub}/certificate-request-tokens/${encodeURIComponent(token.id)}/enrollment-jwt`);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  const result = await enroll({ jwt: jwt.jwt, out: folder, expectHost });
  if (result.kind !== 'enrolled') throw new EnrollError('the client certificate was not issued');
  const found = { cert: result.certificateFile, key: result.keyFile, ca: result.caFile, id: result.id };
  writeFileSync(meta, JSON.stringify(found, null, 2) + '\n', { mode: 0o600 });
  return { ...found, made: true };
}

/**
 * The reserved share named `name` in the environment, when it exists.
 * @param {Api} api
 * @param {string} hub
 * @param {string} name
 * @param {string} envZId
 */
async function reserved(api, hub, name, envZId) {
  for (let page = 0; page < 100; page++) {
    const list = await api.call('GET', `${hub}/shares?page=${page}&size=100`);
    const found = list.content.find((/** @type {any} */ s) => s.name === name && s.envZId === envZId && s.status !== 'DELETING');
    if (found) return found;
    if (page + 1 >= (list.totalPages ?? 1)) return undefined;
  }
  return undefined;
}

/** @param {ShareOptions} options */
export async function share(options) {
  const base = options.env.EDGEHUB_URL?.trim();
  const key = options.env.EDGEHUB_API_KEY?.trim();
  if (!base || !key) throw new EnrollError('set EDGEHUB_URL (the service, e.g. http://localhost:8080) and EDGEHUB_API_KEY (an API key of your hub)');
  let baseUrl;
  try {
    baseUrl = new URL(base);
  } catch {
    throw new EnrollError(`EDGEHUB_URL '${base}' is not a URL (e.g. http://localhost:8080)`);
  }
  const target = targetUrl(options.target, options.tcp);
  const emails = (options.emails ?? []).map(emailDomain);
  if (emails.length && !options.login) throw new EnrollError('--email needs --login PROVIDER_ID (the login the email is checked after)');
  if (options.tcp && options.login) throw new EnrollError('--login applies to HTTP shares, not --tcp');
  const policy = policyOf(options);
  if (policy?.basicAuth && options.login) throw new EnrollError('--basic-auth and --login do not go together: a share has one login');
  const api = new Api(base.replace(/\/+$/, '') + '/', key);
  const { hubId } = await api.call('GET', 'account');
  const hub = `hub/v2/${encodeURIComponent(hubId)}`;

  // checked before anything is made
  /** @type {{ id: string; publicName: string }[]} */
  const frontends = await api.call('GET', `${hub}/frontends`);
  const chosen = options.frontends?.length ? options.frontends : [(frontends.find((f) => f.publicName === 'public') ?? frontends[0])?.id].filter(Boolean);
  for (const id of chosen)
    if (!frontends.some((f) => f.id === id)) throw new EnrollError(`--frontend ${id}: no such frontend in this hub (GET ${hub}/frontends lists them)`);
  if (!chosen.length) throw new EnrollError('the hub has no frontend to publish on');
  if (options.login) {
    await api.call('GET', `${hub}/auth-providers/${encodeURIComponent(options.login)}`).catch((err) => {
      throw new EnrollError(`--login ${options.login}: ${/ 404: /.test(err.message) ? 'no such auth provider in this hub' : err.message}`);
    });
  }

  /** What this run made, undone if it fails before the share is up. */
  const made = { env: '', agent: '', identity: false, certificate: '', share: '' };
  const undo = async () => {
    const steps = [
      made.share && (() => api.call('DELETE', `${hub}/shares/${encodeURIComponent(made.share)}`)),
      made.certificate && (() => api.call('DELETE', `${hub}/client-certificates/${encodeURIComponent(made.certificate)}`)),
      made.agent && made.env && (() => api.call('DELETE', `${hub}/environments/${encodeURIComponent(made.env)}/agents/${encodeURIComponent(made.agent)}`)),
      made.env && (() => api.call('DELETE', `${hub}/environments/${encodeURIComponent(made.env)}`)),
    ];
    for (const step of steps) if (step) await step().catch((err) => options.log(`could not undo a step of the failed run: ${err.message}`));
    if (made.identity) removeIdentity(options.dir);
  };

  let runner;
  /** @type {{ zId: string; frontendEndpoint: string; name: string }} */
  let created;
  let identity;
  try {
    if (!identityExists(options.dir)) {
      // an environment of this machine's own, reached only through its agent (never the hub's default one, whose
      // other shares the edge may reach directly)
      const env = await api.call('POST', `${hub}/environments`, { description: `edgehub share on ${hostname()}`.slice(0, 200), reach: 'agent' });
      made.env = env.envZId;
      const enrollment = await api.call('POST', `${hub}/environments/${encodeURIComponent(env.envZId)}/agent-enrollment`, { ttl: 'PT10M' });
      const enrolled = await agentEnroll({ jwt: enrollment.jwt, dir: options.dir, expectHost: baseUrl.host }).catch((err) => {
        if (err instanceof EnrollError && /enrollment url is on host/.test(err.message)) {
          const host = new URL(enrollment.url).host;
          throw new EnrollError(
            `the service hands out enrollment URLs on ${host} but EDGEHUB_URL is ${baseUrl.host}: set PUBLIC_BASE_URL on the service to the address this machine reaches it at (${baseUrl.origin}), or set EDGEHUB_URL to it`,
          );
        }
        throw err;
      });
      made.identity = true;
      made.agent = enrolled.id;
      options.log(`enrolled this machine as agent ${enrolled.id} of environment ${enrolled.envZId} (identity in ${enrolled.dir})`);
      if (!options.edges?.length && enrolled.edges.every((e) => /^(127\.|\[::1\]|localhost)/.test(e)) && !/^(127\.|\[::1\]|localhost)/.test(baseUrl.hostname)) {
        options.log(
          `warning: the service hands out edge addresses on loopback (${enrolled.edges.join(', ')}): set HUB_EDGE_AGENT_ADDRESSES on the service to an address this machine reaches, or pass --edge HOST:PORT`,
        );
      }
    }
    identity = readIdentity(options.dir);
    if (identity.hubId !== hubId) throw new EnrollError(`the agent in ${options.dir} belongs to hub ${identity.hubId}, the API key to hub ${hubId}`);

    const client = options.mtls ? await clientCertificate(api, hub, options.dir, baseUrl.host) : undefined;
    if (client?.made && client.id) made.certificate = client.id;

    const body = {
      name: options.name ?? `${target.host} via agent ${identity.id}`.slice(0, 200),
      frontendIds: chosen,
      target: target.href.replace(/\/$/, options.tcp ? '' : '/'),
      envZId: identity.envZId,
      ...(options.mtls ? { mutualTls: true } : {}),
      ...(options.login ? { authProviderId: options.login } : {}),
      ...(emails.length ? { oauthEmailDomains: emails } : {}),
      ...(options.tcp ? { protocol: 'tcp' } : {}),
      ...(options.inspect ? { inspect: true } : {}),
      ...(policy ? { policy } : {}),
    };
    const existing = options.name ? await reserved(api, hub, options.name, identity.envZId) : undefined;
    if (existing) {
      const published = existing.backendProxyEndpoint ?? existing.target;
      if (published !== body.target && published !== target.href) {
        throw new EnrollError(
          `the reserved share '${options.name}' publishes ${published}, not ${body.target}: use another --name, or delete it (DELETE ${hub}/shares/${existing.zId})`,
        );
      }
      created = existing;
      options.log(`reserved share '${options.name}' found`);
    } else {
      created = await api.call('POST', `${hub}/shares`, body);
      made.share = created.zId;
    }
    // the agent carries only this share's target, whatever else the environment publishes
    const authority = options.tcp ? `${target.hostname}:${target.port}` : targetAuthority(target);
    const allowed = parseAuthority(authority) ? [parseAllowPattern(authority)] : [];
    runner = new AgentRunner({ identity, edges: options.edges, allow: allowed, log: options.log, dir: options.dir }).start();
  } catch (err) {
    await undo();
    throw err;
  }
  options.log(
    `share ${created.zId}: ${created.frontendEndpoint} -> ${target.href} (Ctrl-C ${options.name ? 'stops serving it; the reserved share is kept' : 'ends it'})`,
  );
  if (options.tcp && !options.mtls) {
    const { hostname, port } = new URL(created.frontendEndpoint);
    options.log(`connect with any TCP client, e.g.: nc ${dialHost(hostname)} ${port}`);
  }
  if (options.mtls && identity) {
    const client = await clientCertificate(api, hub, options.dir, baseUrl.host);
    if (options.tcp) {
      const { hostname, port } = new URL(created.frontendEndpoint);
      const host = dialHost(hostname);
      const sni = host === hostname ? '' : ` -servername ${hostname}`;
      options.log(`openssl s_client -connect ${host}:${port}${sni}${client.ca ? ` -CAfile ${client.ca}` : ''} -cert ${client.cert} -key ${client.key}`);
    } else options.log(`curl ${client.ca ? `--cacert ${client.ca} ` : ''}--cert ${client.cert} --key ${client.key} ${created.frontendEndpoint}`);
  }
  try {
    await options.until;
  } finally {
    if (!options.name) {
      await api.call('DELETE', `${hub}/shares/${encodeURIComponent(created.zId)}`).then(
        () => options.log(`share ${created.zId} deleted`),
        (err) => options.log(`share ${created.zId} could not be deleted: ${err.message}`),
      );
    } else options.log(`share ${created.zId} kept (reserved as '${options.name}')`);
    await runner.stop();
  }
}
