// Custom frontends with their state and the DNS records to set.
import { api } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { Badge, Problem, Section, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

/** @param {{ records: Json }} props */
function Records({ records }) {
  if (!records) return null;
  const rows = [];
  if (records.aRecord) rows.push(['A', records.aRecord.name, (records.aRecord.ipAddress ?? []).join(', ')]);
  for (const c of records.cnameRecords ?? []) rows.push(['CNAME', c.name, c.value]);
  for (const x of records.txtRecords ?? []) rows.push(['TXT', x.name, x.value]);
  if (!rows.length) return null;
  return html`<table class="records"><thead><tr><th scope="col">Type</th><th scope="col">Name</th><th scope="col">Value</th></tr></thead>
    <tbody>${rows.map(([type, name, value]) => html`<tr><td>${type}</td><td><code>${name}</code></td><td><code>${value}</code></td></tr>`)}</tbody></table>`;
}

/** @param {{ base: string }} props */
export function Frontends({ base }) {
  const list = usePoll(
    async () => {
      const page = await api(`${base}/custom-frontends?size=50`);
      const items = Array.isArray(page) ? page : page.content;
      return Promise.all(
        items.map(async (/** @type {Json} */ f) => ({ ...f, records: await api(`${base}/custom-frontends/${f.id}/dns-records`).catch(() => undefined) })),
      );
    },
    [base],
    15_000,
  );
  return html`<${Section} title="Custom frontends">
    <${Problem} error=${list.error} />
    ${list.data && !list.data.length ? html`<p class="empty">No custom frontends. Bring your own hostname with <code>POST ${base}/custom-frontends</code>.</p>` : null}
    ${(list.data ?? []).map(
      (f) => html`<article class="card" key=${f.id}>
        <h3>${f.hostname} <${Badge} status=${f.status} /></h3>
        ${f.statusMessage ? html`<p class="sub">${f.statusMessage}</p>` : null}
        ${f.certificateExpiresAt ? html`<p class="sub">certificate valid until ${when(f.certificateExpiresAt)}</p>` : null}
        <p>DNS records to set:</p>
        <${Records} records=${f.records} />
      </article>`,
    )}
  </${Section}>`;
}
