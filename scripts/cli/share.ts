/**
 * `edgehub share <target>`: the one-liner (zrok's `zrok share`, ngrok's `ngrok http`). With EDGEHUB_URL (the
 * service) and EDGEHUB_API_KEY (a hub's API key) it finds the key's hub, enrolls this machine as an agent of the
 * hub's default environment when --dir holds no identity yet, creates a share of the target in the agent's
 * environment, prints its public address, serves it through the agent, and deletes the share on Ctrl-C.
 */
import { hostname } from 'node:os';
import { parseAllowPattern, targetAuthority } from '../../shared/agentProtocol.js';
import { agentEnroll } from './agent/enroll.js';
import { identityExists, readIdentity } from './agent/identity.js';
import { AgentRunner } from './agent/run.js';
import { EnrollError, oneLine } from './enroll.js';

export interface ShareOptions {
  target: string;
  dir: string;
  name?: string;
  frontendId?: string;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  /** Resolves when the share must end (Ctrl-C). */
  until: Promise<void>;
}

/** `3000`, `localhost:3000` and `http://localhost:3000` all mean http://localhost:3000. */
export function targetUrl(text: string): URL {
  const t = text.trim();
  const withScheme = /^\d{1,5}$/.test(t) ? `http://localhost:${t}` : /^[a-z][a-z0-9+.-]*:\/\//i.test(t) ? t : `http://${t}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new EnrollError(`'${text}' is not a target: give a URL such as http://localhost:3000, a host:port or a port`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EnrollError(`'${text}': the target must be an http or https URL`);
  return url;
}

class Api {
  constructor(
    private readonly base: string,
    private readonly key: string,
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.base), {
        method,
        headers: { authorization: `Bearer ${this.key}`, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new EnrollError(`could not reach ${this.base}: ${oneLine(err)}`);
    }
    const text = await res.text();
    const json = text ? (JSON.parse(text) as T & { message?: string }) : (undefined as T);
    if (!res.ok) throw new EnrollError(`${method} ${path} answered ${res.status}: ${(json as { message?: string } | undefined)?.message ?? text}`);
    return json;
  }
}

export async function share(options: ShareOptions): Promise<void> {
  const base = options.env.EDGEHUB_URL?.trim();
  const key = options.env.EDGEHUB_API_KEY?.trim();
  if (!base || !key) throw new EnrollError('set EDGEHUB_URL (the service, e.g. http://localhost:8000) and EDGEHUB_API_KEY (an API key of your hub)');
  const target = targetUrl(options.target);
  const api = new Api(base.replace(/\/+$/, '') + '/', key);
  const { hubId } = await api.call<{ hubId: string }>('GET', 'account');
  const hub = `hub/v2/${encodeURIComponent(hubId)}`;

  if (!identityExists(options.dir)) {
    const environments = await api.call<{ content: { envZId: string; default: boolean }[] }>('GET', `${hub}/environments?size=100`);
    // the hub's default environment, else an environment of its own for this machine
    const env =
      environments.content.find((e) => e.default) ??
      (await api.call<{ envZId: string }>('POST', `${hub}/environments`, { description: `agent on ${hostname()}`.slice(0, 200) }));
    const enrollment = await api.call<{ jwt: string }>('POST', `${hub}/environments/${encodeURIComponent(env.envZId)}/agent-enrollment`, { ttl: 'PT10M' });
    const enrolled = await agentEnroll({ jwt: enrollment.jwt, dir: options.dir, expectHost: new URL(base).host });
    options.log(`enrolled this machine as agent ${enrolled.id} of environment ${enrolled.envZId} (identity in ${enrolled.dir})`);
  }
  const identity = readIdentity(options.dir);
  if (identity.hubId !== hubId) throw new EnrollError(`the agent in ${options.dir} belongs to hub ${identity.hubId}, the API key to hub ${hubId}`);

  const frontends = await api.call<{ id: string; publicName: string }[]>('GET', `${hub}/frontends`);
  const frontend = options.frontendId ? frontends.find((f) => f.id === options.frontendId) : (frontends.find((f) => f.publicName === 'public') ?? frontends[0]);
  if (!frontend) throw new EnrollError(options.frontendId ? `no frontend ${options.frontendId} in this hub` : 'the hub has no frontend to publish on');
  const name = options.name ?? `${target.host} via agent ${identity.id}`.slice(0, 200);
  const created = await api.call<{ zId: string; frontendEndpoint: string }>('POST', `${hub}/shares`, { name, frontendIds: [frontend.id], target: target.href, envZId: identity.envZId });

  // the agent carries only this share's target, whatever else the environment publishes
  const runner = new AgentRunner({ identity, allow: [parseAllowPattern(targetAuthority(target))], log: options.log }).start();
  options.log(`share ${created.zId}: ${created.frontendEndpoint} -> ${target.href} (Ctrl-C ends it)`);
  try {
    await options.until;
  } finally {
    await api.call('DELETE', `${hub}/shares/${encodeURIComponent(created.zId)}`).then(
      () => options.log(`share ${created.zId} deleted`),
      (err) => options.log(`share ${created.zId} could not be deleted: ${(err as Error).message}`),
    );
    await runner.stop();
  }
}
