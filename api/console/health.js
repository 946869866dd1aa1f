// Health checks with their last result, and a button that runs one now.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { Badge, Problem, Section, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

/** @param {{ base: string, check: Json, onDone: () => void }} props */
function RunButton({ base, check, onDone }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await api(`${base}/health-checks/${check.id}/execute`, { method: 'POST' });
      onDone();
    } catch (err) {
      setError(/** @type {Error} */ (err));
    } finally {
      setBusy(false);
    }
  };
  return html`<button type="button" onClick=${run} disabled=${busy} aria-label=${`Run ${check.name} now`}>${busy ? 'Running…' : 'Run now'}</button><${Problem} error=${error} />`;
}

/** @param {{ base: string, onMade: (check: Json) => void }} props */
function NewCheck({ base, onMade }) {
  const [form, setForm] = useState({ name: '', target: 'http://localhost:3000', path: '/healthz', method: 'GET', expectedStatus: '200', intervalSeconds: '0' });
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const set = (/** @type {string} */ name) => (/** @type {FieldEvent} */ e) => setForm({ ...form, [name]: e.currentTarget.value });
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const made = await api(`${base}/health-checks`, {
        method: 'POST',
        body: {
          name: form.name.trim(),
          target: form.target.trim(),
          path: form.path.trim(),
          method: form.method,
          expectedStatus: Number(form.expectedStatus),
          intervalSeconds: Number(form.intervalSeconds),
        },
      });
      setForm({ ...form, name: '' });
      onMade(made);
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  return html`<form class="inline" onSubmit=${submit} aria-label="New health check">
    <label for="hc-name">Check name</label><input id="hc-name" required value=${form.name} onInput=${set('name')} />
    <label for="hc-method">Method</label><select id="hc-method" value=${form.method} onChange=${set('method')}>${['GET', 'HEAD', 'POST'].map((m) => html`<option>${m}</option>`)}</select>
    <label for="hc-target">Target</label><input id="hc-target" type="url" required value=${form.target} onInput=${set('target')} />
    <label for="hc-path">Path</label><input id="hc-path" required value=${form.path} onInput=${set('path')} size="10" />
    <label for="hc-status">Expected status</label><input id="hc-status" type="number" min="100" max="599" required value=${form.expectedStatus} onInput=${set('expectedStatus')} />
    <label for="hc-interval">Every (s, 0 = by hand)</label><input id="hc-interval" type="number" min="0" value=${form.intervalSeconds} onInput=${set('intervalSeconds')} />
    <button type="submit">Create check</button>
    <${Problem} error=${error} />
  </form>`;
}

/** @param {{ base: string }} props */
export function Health({ base }) {
  const list = usePoll(() => api(`${base}/health-checks?size=50`), [base], 10_000);
  const checks = list.data?.content ?? [];
  return html`<${Section} title="Health checks">
    <${NewCheck} base=${base} onMade=${list.reload} />
    <${Problem} error=${list.error} />
    ${list.data && !checks.length ? html`<p class="empty">No health checks yet. Create one above: it probes a URL (the target plus the path) and compares the status; <strong>Run now</strong> tries it at once.</p>` : null}
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Name</th><th scope="col">Probe</th><th scope="col">Last result</th><th scope="col">When</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${checks.map(
        (/** @type {Json} */ c) => html`<tr key=${c.id}><th scope="row">${c.name}${c.enabled ? null : html` <span class="badge plain">disabled</span>`}</th>
          <td><code>${c.method} ${c.target}${c.path ?? ''}</code><div class="sub">expects ${c.expectedStatus}, every ${c.intervalSeconds ?? '—'} s</div></td>
          <td>${c.lastResult ? html`<${Badge} status=${c.lastResult.result} /> <span class="sub">${c.lastResult.status ?? ''} ${c.lastResult.latencyMs != null ? `${c.lastResult.latencyMs} ms` : ''} ${c.lastResult.message ?? ''}</span>` : 'never run'}</td>
          <td>${when(c.lastResult?.executedAt)}</td>
          <td><${RunButton} base=${base} check=${c} onDone=${list.reload} /></td></tr>`,
      )}</tbody>
    </table></div>
  </${Section}>`;
}
