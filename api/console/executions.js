// Executions: the audit trail of every change, filterable by type, resource and status.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { Badge, Pager, Problem, Section, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

const STATUSES = ['', 'QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED'];

/** @param {{ base: string }} props */
export function Executions({ base }) {
  const [filters, setFilters] = useState({ type: '', resourceType: '', resourceId: '', status: '' });
  const [page, setPage] = useState(0);
  const query = Object.entries(filters)
    .filter(([, v]) => v.trim())
    .map(([k, v]) => `&${k}=${encodeURIComponent(v.trim())}`)
    .join('');
  const list = usePoll(() => api(`${base}/executions?page=${page}&size=25&sort=createdAt,desc${query}`), [base, page, query], 10_000);
  /** @param {'type' | 'resourceType' | 'resourceId'} name @param {string} label */
  const field = (name, label) => html`<label for=${`f-${name}`}>${label}</label>
    <input id=${`f-${name}`} value=${filters[name]} onChange=${(/** @type {FieldEvent} */ e) => (setPage(0), setFilters({ ...filters, [name]: e.currentTarget.value }))} />`;
  return html`<${Section} title="Executions">
    <form class="filters" onSubmit=${(/** @type {Event} */ e) => e.preventDefault()} aria-label="Filter executions">
      ${field('type', 'Type')} ${field('resourceType', 'Resource type')} ${field('resourceId', 'Resource id')}
      <label for="f-status">Status</label>
      <select id="f-status" value=${filters.status} onChange=${(/** @type {FieldEvent<HTMLSelectElement>} */ e) => (setPage(0), setFilters({ ...filters, status: e.currentTarget.value }))}>
        ${STATUSES.map((s) => html`<option value=${s}>${s || 'any'}</option>`)}
      </select>
    </form>
    <${Problem} error=${list.error} />
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">When</th><th scope="col">Type</th><th scope="col">Resource</th><th scope="col">Status</th><th scope="col">By</th><th scope="col">Error</th></tr></thead>
      <tbody>${(list.data?.content ?? []).map(
        (
          /** @type {Json} */ e,
        ) => html`<tr key=${e.id}><td>${when(e.createdAt)}</td><th scope="row"><code>${e.type}</code></th><td>${e.resourceType ?? '—'} <code>${e.resourceId ?? ''}</code></td>
          <td><${Badge} status=${e.status} />${e.attempts > 1 ? html` <span class="sub">${e.attempts} attempts</span>` : null}</td><td>${e.createdBy}</td><td class="sub">${e.error ?? ''}</td></tr>`,
      )}</tbody>
    </table></div>
    <${Pager} page=${list.data} onPage=${setPage} label="Executions" />
  </${Section}>`;
}
