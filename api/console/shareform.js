// Creating a share, and a share's settings: what it carries (HTTP, HTTP/2 to the target for gRPC, or TCP streams),
// access mode (public, mutual TLS, login with an auth provider and the email domains it admits) and request
// inspection. Everything goes through POST and PATCH H/shares.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { Problem, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

const items = (/** @type {Json} */ page) => (Array.isArray(page) ? page : (page?.content ?? []));

/**
 * What a share carries. `protocol: "tcp"` carries TCP streams to a tcp:// target (no login, nothing to inspect);
 * `targetProtocol: "h2"` speaks HTTP/2 to the target (gRPC), whose exchanges are not recorded.
 */
const KINDS = [
  { id: 'http', label: 'HTTP', example: 'http://localhost:3000' },
  { id: 'h2', label: 'HTTP/2 to the target (gRPC)', example: 'http://localhost:50051' },
  { id: 'tcp', label: 'TCP (SSH, databases, any TCP service)', example: 'tcp://localhost:22' },
];
/** The entry of KINDS with this id (always one of them: the ids come from KINDS). @param {string} id */
const kindNamed = (id) => /** @type {typeof KINDS[number]} */ (KINDS.find((k) => k.id === id));

/** A share's kind, one of KINDS' ids. */
export const kindOf = (/** @type {Json} */ share) => (share?.protocol === 'tcp' ? 'tcp' : share?.targetProtocol === 'h2' ? 'h2' : 'http');

/** A kind in a few words, for lists; undefined for plain HTTP. */
export const kindWords = (/** @type {Json} */ share) =>
  /** @type {Record<string, string | undefined>} */ ({ tcp: 'TCP', h2: 'HTTP/2 to the target' })[kindOf(share)];

/**
 * The address a TCP client dials: a share's port alone finds it, and a name under `.localhost` (a local service's
 * frontends) is loopback by definition but not answered by every system resolver, so it is shown as localhost.
 */
const dialHost = (/** @type {string} */ hostname) => (hostname === 'localhost' || hostname.endsWith('.localhost') ? 'localhost' : hostname);

/**
 * A share's public address: a link for HTTP, the tcp:// address and a line to connect with for TCP.
 * @param {{ share: Json }} props
 */
export function PublicAddress({ share }) {
  if (kindOf(share) !== 'tcp') return html`<a href=${share.frontendEndpoint} target="_blank" rel="noopener noreferrer">${share.frontendEndpoint}</a>`;
  let line = '';
  try {
    const { hostname, port } = new URL(share.frontendEndpoint);
    const host = dialHost(hostname);
    line = share.mutualTls
      ? `openssl s_client -connect ${host}:${port}${host === hostname ? '' : ` -servername ${hostname}`} -cert NAME.crt -key NAME.key`
      : `nc ${host} ${port}`;
  } catch {
    /* not a URL yet (no frontend): the address alone */
  }
  return html`<code>${share.frontendEndpoint}</code>${line ? html`<div class="sub">connect: <code data-connect>${line}</code></div>` : null}`;
}

/** The body fields of a kind for create. */
const kindBody = (/** @type {string} */ kind) => (kind === 'tcp' ? { protocol: 'tcp' } : kind === 'h2' ? { targetProtocol: 'h2' } : {});

/** The share's access settings as the form edits them. */
const accessOf = (/** @type {Json} */ share) => ({
  mode: share?.authProviderId ? 'login' : share?.mutualTls ? 'mtls' : 'public',
  authProviderId: share?.authProviderId ?? '',
  domains: (share?.oauthEmailDomains ?? []).join(', '),
  inspect: Boolean(share?.inspect),
});
/** How a share is reached, as the form edits it. @typedef {ReturnType<typeof accessOf>} Access */

/**
 * The body fields of `access` for create or PATCH of a share of `kind`: a TCP share has no login, and only an HTTP
 * share's exchanges are recorded (the API refuses the others, so they are not sent).
 * @param {Access} access
 * @param {string} [kind]
 */
function accessBody(access, kind = 'http') {
  const login = kind !== 'tcp' && access.mode === 'login';
  const domains = access.domains.split(/[\s,]+/).filter(Boolean);
  return {
    mutualTls: access.mode === 'mtls',
    ...(kind !== 'tcp' ? { authProviderId: login ? access.authProviderId || null : null } : {}),
    ...(login ? { oauthEmailDomains: domains.length ? domains : null } : {}),
    ...(kind === 'http' ? { inspect: access.inspect } : {}),
  };
}

/**
 * Access mode radios, the login's provider and domains, and the inspect switch, as they apply to `kind`.
 * @param {{ base: string, value: Access, onChange: (value: Access) => void, idPrefix: string, kind?: string }} props
 */
function AccessFields({ base, value, onChange, idPrefix, kind = 'http' }) {
  const providers = usePoll(() => api(`${base}/auth-providers?size=100`), [base], 0);
  const set = (/** @type {Partial<Access>} */ patch) => onChange({ ...value, ...patch });
  const list = items(providers.data);
  const tcp = kind === 'tcp';
  return html`<fieldset class="access">
    <legend>Who may reach it</legend>
    <label class="check"><input type="radio" name=${`${idPrefix}-mode`} checked=${value.mode === 'public' || (tcp && value.mode === 'login')} onChange=${() => set({ mode: 'public' })} /> Public: anyone with the address</label>
    <label class="check"><input type="radio" name=${`${idPrefix}-mode`} checked=${value.mode === 'mtls'} onChange=${() => set({ mode: 'mtls' })} /> Mutual TLS: only clients presenting a client certificate of this hub${tcp ? ' (the port speaks TLS)' : ''}</label>
    ${
      tcp
        ? html`<p class="sub">Login applies to HTTP shares: a TCP share admits by address or by client certificate.</p>`
        : html`<label class="check"><input type="radio" name=${`${idPrefix}-mode`} checked=${value.mode === 'login'} disabled=${!list.length} onChange=${() => set({ mode: 'login', authProviderId: value.authProviderId || list[0]?.id || '' })} /> Login with an identity provider${list.length ? '' : ' (add an auth provider first: POST /auth-providers)'}</label>`
    }
    ${
      !tcp && value.mode === 'login'
        ? html`<div class="login-rules">
          <label for=${`${idPrefix}-provider`}>Auth provider</label>
          <select id=${`${idPrefix}-provider`} value=${value.authProviderId} onChange=${(/** @type {FieldEvent<HTMLSelectElement>} */ e) => set({ authProviderId: e.currentTarget.value })}>
            ${list.map((/** @type {Json} */ p) => html`<option value=${p.id}>${p.name} (${p.type})</option>`)}
          </select>
          <label for=${`${idPrefix}-domains`}>Email domains (optional)</label>
          <input id=${`${idPrefix}-domains`} placeholder="example.com, example.org" value=${value.domains} onInput=${(/** @type {FieldEvent} */ e) => set({ domains: e.currentTarget.value })} />
        </div>`
        : null
    }
    ${
      kind === 'http'
        ? html`<label class="check"><input type="checkbox" checked=${value.inspect} onChange=${(/** @type {FieldEvent} */ e) => set({ inspect: e.currentTarget.checked })} /> Inspect requests (record the last exchanges to read and replay them)</label>`
        : null
    }
  </fieldset>`;
}

/** @param {{ base: string, onMade: (share: Json) => void, onCancel: () => void }} props */
export function CreateShare({ base, onMade, onCancel }) {
  const envs = usePoll(() => api(`${base}/environments?size=100`), [base], 0);
  const frontends = usePoll(() => api(`${base}/frontends`), [base], 0);
  const [name, setName] = useState('');
  const [kind, setKind] = useState('http');
  const [target, setTarget] = useState(KINDS[0].example);
  const [envZId, setEnv] = useState('');
  const [access, setAccess] = useState(accessOf(undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [busy, setBusy] = useState(false);
  const fronts = items(frontends.data);
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      const frontend = fronts.find((/** @type {Json} */ f) => f.publicName === 'public') ?? fronts[0];
      if (!frontend) throw new Error('no frontend is available to this hub');
      const body = {
        name: name.trim(),
        target: target.trim(),
        frontendIds: [frontend.id],
        ...(envZId ? { envZId } : {}),
        ...kindBody(kind),
        ...accessBody(access, kind),
      };
      const made = await api(`${base}/shares`, { method: 'POST', body });
      onMade(made);
    } catch (err) {
      setError(/** @type {Error} */ (err));
    } finally {
      setBusy(false);
    }
  };
  // a target still at the previous kind's example follows the kind
  const chooseKind = (/** @type {string} */ next) => {
    if (KINDS.some((k) => k.example === target.trim())) setTarget(kindNamed(next).example);
    setKind(next);
  };
  return html`<form class="card form" onSubmit=${submit} aria-label="New share">
    <h3>New share</h3>
    <div class="grid">
      <label for="share-name">Share name</label>
      <input id="share-name" required value=${name} onInput=${(/** @type {FieldEvent} */ e) => setName(e.currentTarget.value)} />
      <label for="share-kind">It carries</label>
      <select id="share-kind" value=${kind} onChange=${(/** @type {FieldEvent<HTMLSelectElement>} */ e) => chooseKind(e.currentTarget.value)}>
        ${KINDS.map((k) => html`<option value=${k.id}>${k.label}</option>`)}
      </select>
      <label for="share-target">Target URL</label>
      <input id="share-target" required type="url" placeholder=${kindNamed(kind).example} value=${target} onInput=${(/** @type {FieldEvent} */ e) => setTarget(e.currentTarget.value)} />
      <label for="share-env">Environment</label>
      <select id="share-env" value=${envZId} onChange=${(/** @type {FieldEvent<HTMLSelectElement>} */ e) => setEnv(e.currentTarget.value)}>
        <option value="">the hub's default environment</option>
        ${items(envs.data)
          .filter((/** @type {Json} */ e) => !e.default)
          .map((/** @type {Json} */ e) => html`<option value=${e.envZId}>${e.description} (${e.envZId})</option>`)}
      </select>
    </div>
    <${AccessFields} base=${base} value=${access} onChange=${setAccess} idPrefix="new" kind=${kind} />
    <div class="actions"><button type="submit" disabled=${busy}>${busy ? 'Creating…' : 'Create share'}</button> <button type="button" onClick=${onCancel}>Cancel</button></div>
    <${Problem} error=${error} />
  </form>`;
}

/** @param {{ base: string, share: Json, onSaved: (share: Json) => void }} props */
export function ShareSettings({ base, share, onSaved }) {
  const [access, setAccess] = useState(accessOf(share));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [saved, setSaved] = useState(false);
  const save = async (/** @type {Event} */ event) => {
    event.preventDefault();
    setError(undefined);
    setSaved(false);
    try {
      const updated = await api(`${base}/shares/${share.zId}`, { method: 'PATCH', body: accessBody(access, kindOf(share)) });
      setSaved(true);
      onSaved(updated);
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  return html`<form class="form" onSubmit=${save} aria-label="Share settings">
    <${AccessFields} base=${base} value=${access} onChange=${(/** @type {Access} */ v) => (setSaved(false), setAccess(v))} idPrefix="edit" kind=${kindOf(share)} />
    <div class="actions"><button type="submit">Save settings</button> ${saved ? html`<span role="status" class="sub">Saved: every edge applies it within 2 s.</span>` : null}</div>
    <${Problem} error=${error} />
  </form>`;
}
