// Shares: status, what each carries, public address, environment, access rules, and live rx/tx (one sparklines call
// per refresh).
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { EnvName, ShareStatus, useEnvironmentStates } from './environments.js';
import { Pager, Problem, Section, usePoll } from './parts.js';
import { CreateShare, kindWords, PublicAddress } from './shareform.js';
import { TrafficChart, WindowPicker, windowOf } from './traffic.js';

/** @typedef {import('./api.js').Json} Json */

const access = (/** @type {Json} */ s) => {
  const rules = [];
  if (s.mutualTls) rules.push('mutual TLS');
  if (s.oauthProvider) rules.push(`login (${s.oauthProvider}${s.oauthEmailDomains?.length ? `: ${s.oauthEmailDomains.join(', ')}` : ''})`);
  if (s.inspect) rules.push('inspected');
  return rules.length ? rules.join(' + ') : 'public';
};

/** @param {{ base: string }} props */
export function Shares({ base }) {
  const [page, setPage] = useState(0);
  const list = usePoll(() => api(`${base}/shares?page=${page}&size=20&sort=createdAt,desc`), [base, page], 10_000);
  // one sparklines call for the view, every 10 s
  const [windowId, setWindow] = useState('1h');
  const [creating, setCreating] = useState(false);
  const w = windowOf(windowId);
  const lines = usePoll(() => api(`${base}/sparklines?duration=${w.duration}&step=${w.smallStep}`), [base, windowId], 10_000);
  const byId = new Map((lines.data?.sparklines ?? []).filter((/** @type {Json} */ l) => l.scope === 'share').map((/** @type {Json} */ l) => [l.id, l.samples]));
  const shares = list.data?.content ?? [];
  const envs = useEnvironmentStates(
    base,
    shares.map((/** @type {Json} */ s) => s.envZId),
  );
  const actions = html`<${WindowPicker} value=${windowId} onChange=${setWindow} label="Traffic window" /><button type="button" onClick=${() => setCreating(true)}>New share</button>`;
  return html`<${Section} title="Shares" actions=${actions}>
    ${creating ? html`<${CreateShare} base=${base} onCancel=${() => setCreating(false)} onMade=${(/** @type {Json} */ made) => (setCreating(false), (location.hash = `#/shares/${made.zId}`))} />` : null}
    <${Problem} error=${list.error ?? lines.error} />
    ${list.data && !shares.length ? html`<p class="empty">No shares yet. <button type="button" class="link" onClick=${() => setCreating(true)}>Create one</button> for a service you run (for example <code>http://localhost:3000</code>), or run <code>edgehub share http://localhost:3000</code> on the machine that runs it.</p>` : null}
    ${
      shares.length
        ? html`<div class="table-wrap"><table class="stack">
      <caption class="sr-only">Shares of this hub</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Public address</th><th scope="col">Environment</th><th scope="col">Access</th><th scope="col">Traffic (${w.label})</th></tr></thead>
      <tbody>
        ${shares.map(
          (/** @type {Json} */ s) => html`<tr key=${s.zId} data-share=${s.zId}>
            <th scope="row"><a href=${`#/shares/${s.zId}`}>${s.name}</a><div class="sub">${s.zId}${kindWords(s) ? ` · ${kindWords(s)}` : ''} · ${when(s.createdAt)}</div></th>
            <td data-label="Status"><${ShareStatus} share=${s} env=${envs.get(s.envZId)} /></td>
            <td data-label="Public address"><${PublicAddress} share=${s} /><div class="sub">→ ${s.backendProxyEndpoint}</div></td>
            <td data-label="Environment"><${EnvName} envZId=${s.envZId} env=${envs.get(s.envZId)} /></td>
            <td data-label="Access">${access(s)}</td>
            <td data-label=${`Traffic (${w.label})`}><${TrafficChart} compact samples=${lines.data ? (byId.get(s.zId) ?? []) : undefined} window=${w} label=${`Traffic of ${s.name}`} /></td>
          </tr>`,
        )}
      </tbody>
    </table></div>`
        : null
    }
    <${Pager} page=${list.data} onPage=${setPage} label="Shares" />
  </${Section}>`;
}
