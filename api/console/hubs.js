// The operator's view: hubs (create with features, API keys shown once, delete after confirming) and links.
import { useState } from 'preact/hooks';
import { api, apiText } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { CopyButton, Pager, Problem, Section, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

/** @param {{ hub: Json }} props */
function Keys({ hub }) {
  const keys = usePoll(() => api(`/admin/v1/hubs/${hub.id}/api-keys`), [hub.id], 0);
  const [made, setMade] = useState(/** @type {import('./api.js').Json} */ (undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const create = async () => {
    setError(undefined);
    try {
      setMade(await api(`/admin/v1/hubs/${hub.id}/api-keys`, { method: 'POST', body: { name: 'console' } }));
      await keys.reload();
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  const revoke = async (/** @type {Json} */ key) => {
    setError(undefined);
    try {
      await api(`/admin/v1/hubs/${hub.id}/api-keys/${key.id}`, { method: 'DELETE' });
      await keys.reload();
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  const list = keys.data ?? [];
  return html`<div class="keys">
    <h4>API keys</h4>
    <${Problem} error=${keys.error ?? error} />
    ${keys.data && !list.length ? html`<p class="empty">No API key yet: make one with <strong>New API key</strong> and hand it to the hub's people (it signs in here and to the API).</p>` : null}
    <ul>${list.map(
      (
        /** @type {Json} */ k,
      ) => html`<li key=${k.id} data-key=${k.id}><code>${k.username}</code> ${k.name} <span class="sub">${k.revokedAt ? `revoked ${when(k.revokedAt)}` : `since ${when(k.createdAt)}`}</span>
        ${k.revokedAt ? null : html` <button type="button" class="danger" onClick=${() => revoke(k)} aria-label=${`Revoke ${k.name} (${k.username})`}>Revoke</button>`}</li>`,
    )}</ul>
    <button type="button" onClick=${create}>New API key</button>
    ${made && html`<div class="reveal" role="status"><p>The key's token, shown this once:</p><pre><code class="api-key">${made.token}</code></pre><${CopyButton} text=${made.token} label="Copy the token" /></div>`}
  </div>`;
}

/** @param {{ hub: Json, onDeleted: () => void }} props */
function HubCard({ hub, onDeleted }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const remove = async () => {
    try {
      await api(`/admin/v1/hubs/${hub.id}`, { method: 'DELETE' });
      onDeleted();
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  return html`<article class="card" data-hub=${hub.id}>
    <h3>${hub.name} <code>${hub.id}</code></h3>
    <p class="sub">created ${when(hub.createdAt)} · IPsec ${hub.features.ipsec ? 'on' : 'off'}</p>
    <${Keys} hub=${hub} />
    <${Problem} error=${error} />
    ${
      confirming
        ? html`<p role="alert">Delete ${hub.name} and everything in it? Its keys stop working and its shares stop answering.
          <button type="button" class="danger" onClick=${remove}>Delete ${hub.name}</button> <button type="button" onClick=${() => setConfirming(false)}>Keep it</button></p>`
        : html`<div class="danger-zone"><button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete hub…</button></div>`
    }
  </article>`;
}

/** @param {{ onMade: () => void }} props */
function NewHub({ onMade }) {
  const [name, setName] = useState('');
  const [ipsec, setIpsec] = useState(false);
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault();
    setError(undefined);
    try {
      await api('/admin/v1/hubs', { method: 'POST', body: { name: name.trim(), features: { ipsec } } });
      setName('');
      onMade();
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  return html`<form class="inline" onSubmit=${submit}>
    <label for="hub-name">Hub name</label>
    <input id="hub-name" required value=${name} onInput=${(/** @type {FieldEvent} */ e) => setName(e.currentTarget.value)} />
    <label class="check"><input type="checkbox" checked=${ipsec} onChange=${(/** @type {FieldEvent} */ e) => setIpsec(e.currentTarget.checked)} /> IPsec</label>
    <button type="submit">Create hub</button>
    <${Problem} error=${error} />
  </form>`;
}

/**
 * The service's Prometheus series. `/metrics` wants the admin token as a bearer, which a plain link cannot send
 * (a browser following it got 401): the link's click fetches them with the token and shows the text here.
 */
function Metrics() {
  const [text, setText] = useState(/** @type {string | undefined} */ (undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [busy, setBusy] = useState(false);
  const load = async (/** @type {Event} */ event) => {
    event?.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    try {
      setText(await apiText('/metrics'));
    } catch (err) {
      setError(/** @type {Error} */ (err));
    } finally {
      setBusy(false);
    }
  };
  return html`<li>
    <a href="/metrics" onClick=${load} aria-busy=${busy ? 'true' : 'false'}>Prometheus metrics (/metrics)</a>
    <span class="sub"> — shown here with the admin token you signed in with (a browser opening <code>/metrics</code> itself sends none); Prometheus scrapes it with the token as a bearer token (<code>authorization: Bearer …</code>), or each process's <code>HUB_METRICS_PORT</code> without one</span>
    <${Problem} error=${error} />
    ${text === undefined ? null : html`<pre class="metrics" aria-label="Prometheus metrics">${text}</pre>`}
  </li>`;
}

export function Hubs() {
  const [page, setPage] = useState(0);
  const list = usePoll(() => api(`/admin/v1/hubs?page=${page}&size=10&sort=createdAt,desc`), [page], 30_000);
  return html`<div>
    <${Section} title="Hubs">
      <${NewHub} onMade=${list.reload} />
      <${Problem} error=${list.error} />
      ${
        list.data && !list.data.content.length && page === 0
          ? html`<p class="empty hint">No hub yet. A hub is a tenant: its people sign in to this console with an API key of it and publish their shares. Name one above and press <strong>Create hub</strong>, then make it an API key with <strong>New API key</strong>.</p>`
          : null
      }
      ${(list.data?.content ?? []).map((/** @type {Json} */ h) => html`<${HubCard} key=${h.id} hub=${h} onDeleted=${list.reload} />`)}
      <${Pager} page=${list.data} onPage=${setPage} label="Hubs" />
    </${Section}>
    <${Section} title="Operations">
      <ul class="links">
        <li><a href="/docs">API reference (/docs)</a></li>
        <li><a href="/admin/queues">Job queues (/admin/queues)</a> <span class="sub">— your browser asks for a user and password there: the user is <code>admin</code>, the password is the admin token you signed in with</span></li>
        <${Metrics} />
      </ul>
    </${Section}>
  </div>`;
}
