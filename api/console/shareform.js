// Creating a share, and a share's settings: access mode (public, mutual TLS, login with an auth provider and the
// email domains it admits) and request inspection. Everything goes through POST and PATCH H/shares.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { Problem, usePoll } from './parts.js';

const items = (page) => (Array.isArray(page) ? page : (page?.content ?? []));

/** The share's access settings as the form edits them. */
export const accessOf = (share) => ({
  mode: share?.authProviderId ? 'login' : share?.mutualTls ? 'mtls' : 'public',
  authProviderId: share?.authProviderId ?? '',
  domains: (share?.oauthEmailDomains ?? []).join(', '),
  inspect: Boolean(share?.inspect),
});

/** The body fields of `access` for create or PATCH. */
export function accessBody(access) {
  const login = access.mode === 'login';
  const domains = access.domains.split(/[\s,]+/).filter(Boolean);
  return {
    mutualTls: access.mode === 'mtls',
    authProviderId: login ? access.authProviderId || null : null,
    ...(login ? { oauthEmailDomains: domains.length ? domains : null } : {}),
    inspect: access.inspect,
  };
}

/** Access mode radios, the login's provider and domains, and the inspect switch. */
export function AccessFields({ base, value, onChange, idPrefix }) {
  const providers = usePoll(() => api(`${base}/auth-providers?size=100`), [base], 0);
  const set = (patch) => onChange({ ...value, ...patch });
  const list = items(providers.data);
  return html`<fieldset class="access">
    <legend>Who may reach it</legend>
    <label class="check"><input type="radio" name=${`${idPrefix}-mode`} checked=${value.mode === 'public'} onChange=${() => set({ mode: 'public' })} /> Public: anyone with the address</label>
    <label class="check"><input type="radio" name=${`${idPrefix}-mode`} checked=${value.mode === 'mtls'} onChange=${() => set({ mode: 'mtls' })} /> Mutual TLS: only clients presenting a client certificate of this hub</label>
    <label class="check"><input type="radio" name=${`${idPrefix}-mode`} checked=${value.mode === 'login'} disabled=${!list.length} onChange=${() => set({ mode: 'login', authProviderId: value.authProviderId || list[0]?.id || '' })} /> Login with an identity provider${list.length ? '' : ' (add an auth provider first: POST /auth-providers)'}</label>
    ${value.mode === 'login'
      ? html`<div class="login-rules">
          <label for=${`${idPrefix}-provider`}>Auth provider</label>
          <select id=${`${idPrefix}-provider`} value=${value.authProviderId} onChange=${(e) => set({ authProviderId: e.currentTarget.value })}>
            ${list.map((p) => html`<option value=${p.id}>${p.name} (${p.type})</option>`)}
          </select>
          <label for=${`${idPrefix}-domains`}>Email domains (optional)</label>
          <input id=${`${idPrefix}-domains`} placeholder="example.com, example.org" value=${value.domains} onInput=${(e) => set({ domains: e.currentTarget.value })} />
        </div>`
      : null}
    <label class="check"><input type="checkbox" checked=${value.inspect} onChange=${(e) => set({ inspect: e.currentTarget.checked })} /> Inspect requests (record the last exchanges to read and replay them)</label>
  </fieldset>`;
}

export function CreateShare({ base, onMade, onCancel }) {
  const envs = usePoll(() => api(`${base}/environments?size=100`), [base], 0);
  const frontends = usePoll(() => api(`${base}/frontends`), [base], 0);
  const [name, setName] = useState('');
  const [target, setTarget] = useState('http://localhost:3000');
  const [envZId, setEnv] = useState('');
  const [access, setAccess] = useState(accessOf(undefined));
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const fronts = items(frontends.data);
  const submit = async (event) => {
    event.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      const frontend = fronts.find((f) => f.publicName === 'public') ?? fronts[0];
      if (!frontend) throw new Error('no frontend is available to this hub');
      const made = await api(`${base}/shares`, { method: 'POST', body: { name: name.trim(), target: target.trim(), frontendIds: [frontend.id], ...(envZId ? { envZId } : {}), ...accessBody(access) } });
      onMade(made);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card form" onSubmit=${submit} aria-label="New share">
    <h3>New share</h3>
    <div class="grid">
      <label for="share-name">Share name</label>
      <input id="share-name" required value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
      <label for="share-target">Target URL</label>
      <input id="share-target" required type="url" value=${target} onInput=${(e) => setTarget(e.currentTarget.value)} />
      <label for="share-env">Environment</label>
      <select id="share-env" value=${envZId} onChange=${(e) => setEnv(e.currentTarget.value)}>
        <option value="">the hub's default environment</option>
        ${items(envs.data).filter((e) => !e.default).map((e) => html`<option value=${e.envZId}>${e.description} (${e.envZId})</option>`)}
      </select>
    </div>
    <${AccessFields} base=${base} value=${access} onChange=${setAccess} idPrefix="new" />
    <div class="actions"><button type="submit" disabled=${busy}>${busy ? 'Creating…' : 'Create share'}</button> <button type="button" onClick=${onCancel}>Cancel</button></div>
    <${Problem} error=${error} />
  </form>`;
}

export function ShareSettings({ base, share, onSaved }) {
  const [access, setAccess] = useState(accessOf(share));
  const [error, setError] = useState(undefined);
  const [saved, setSaved] = useState(false);
  const save = async (event) => {
    event.preventDefault();
    setError(undefined);
    setSaved(false);
    try {
      const updated = await api(`${base}/shares/${share.zId}`, { method: 'PATCH', body: accessBody(access) });
      setSaved(true);
      onSaved(updated);
    } catch (err) {
      setError(err);
    }
  };
  return html`<form class="form" onSubmit=${save} aria-label="Share settings">
    <${AccessFields} base=${base} value=${access} onChange=${(v) => (setSaved(false), setAccess(v))} idPrefix="edit" />
    <div class="actions"><button type="submit">Save settings</button> ${saved ? html`<span role="status" class="sub">Saved: every edge applies it within 2 s.</span>` : null}</div>
    <${Problem} error=${error} />
  </form>`;
}
