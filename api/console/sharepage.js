// One share's page (#/shares/{zId}): its traffic as rates over 1 h / 24 h / 7 d (live while traffic flows), its
// recorded requests with replay, its settings and its traffic policy.
import { useState } from 'preact/hooks';
import { ApiError, api } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { Badge, Problem, Section, usePoll } from './parts.js';
import { EnvName } from './environments.js';
import { Requests } from './requests.js';
import { kindOf, kindWords, PublicAddress, ShareSettings } from './shareform.js';
import { SharePolicy } from './sharepolicy.js';
import { TrafficChart, WindowPicker, windowOf } from './traffic.js';

/**
 * Why a share's exchanges are not recorded, by kind (HTTP shares' are, when inspection is on).
 * @type {Record<string, string | undefined>}
 */
const NOT_RECORDED = {
  tcp: 'A TCP share carries streams of bytes, not requests: there is nothing to record or replay.',
  h2: 'Inspection records HTTP/1.1 exchanges with the target; a share that speaks HTTP/2 to its target (gRPC) is not recorded.',
};

/** @param {{ base: string, zId: string }} props */
export function SharePage({ base, zId }) {
  const share = usePoll(() => api(`${base}/shares/${zId}`), [base, zId], 5_000);
  const [windowId, setWindow] = useState('1h');
  const w = windowOf(windowId);
  const env = usePoll(() => (share.data ? api(`${base}/environments/${share.data.envZId}`) : Promise.resolve(undefined)), [base, share.data?.envZId], 0);
  const series = usePoll(() => api(`${base}/shares/${zId}/metrics?duration=${w.duration}&step=${w.step}`), [base, zId, windowId], 5_000);
  const s = share.data;
  if (share.error instanceof ApiError && share.error.status === 404)
    return html`<${Section} title="Share not found"><p class="empty">No share <code>${zId}</code> in this hub (it may have been deleted). <a href="#/shares">Back to the shares</a></p></${Section}>`;
  if (!s) return html`<div><${Problem} error=${share.error} /><p class="loading">Loading the share…</p></div>`;
  return html`<div class="share-page" data-share-page=${s.zId}>
    <p class="crumbs"><a href="#/shares">Shares</a> / ${s.name}</p>
    <header class="share-head">
      <h2>${s.name} <${Badge} status=${s.status} /></h2>
      <p><${PublicAddress} share=${s} /> → <code>${s.backendProxyEndpoint}</code></p>
      <p class="sub">${s.zId}${kindWords(s) ? ` · ${kindWords(s)}` : ''} · environment <${EnvName} envZId=${s.envZId} env=${env.data} /> · created ${when(s.createdAt)} by ${s.createdBy}</p>
    </header>
    <${Section} title="Traffic" actions=${html`<${WindowPicker} value=${windowId} onChange=${setWindow} label="Traffic window" />`}>
      <${Problem} error=${series.error} />
      <${TrafficChart} samples=${series.data?.samples} window=${w} label=${`Traffic of ${s.name}`} />
    </${Section}>
    <${Section} title="Requests">
      ${NOT_RECORDED[kindOf(s)] ? html`<p class="empty">${NOT_RECORDED[kindOf(s)]}</p>` : html`<${Requests} base=${base} share=${s} />`}
    </${Section}>
    <${Section} title="Settings">
      <${ShareSettings} key=${s.zId} base=${base} share=${s} onSaved=${() => share.reload()} />
    </${Section}>
    <${Section} title="Traffic policy">
      <${SharePolicy} key=${s.zId} base=${base} share=${s} onSaved=${() => share.reload()} />
    </${Section}>
  </div>`;
}
