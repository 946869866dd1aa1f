// Health checks with their last result, and a button that runs one now.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { Badge, Problem, Section, usePoll } from './parts.js';

function RunButton({ base, check, onDone }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(undefined);
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await api(`${base}/health-checks/${check.id}/execute`, { method: 'POST' });
      onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<button type="button" onClick=${run} disabled=${busy} aria-label=${`Run ${check.name} now`}>${busy ? 'Running…' : 'Run now'}</button><${Problem} error=${error} />`;
}

export function Health({ base }) {
  const list = usePoll(() => api(`${base}/health-checks?size=50`), [base], 10_000);
  const checks = list.data?.content ?? [];
  return html`<${Section} title="Health checks">
    <${Problem} error=${list.error} />
    ${list.data && !checks.length ? html`<p class="empty">No health checks.</p>` : null}
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Name</th><th scope="col">Probe</th><th scope="col">Last result</th><th scope="col">When</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${checks.map(
        (c) => html`<tr key=${c.id}><th scope="row">${c.name}${c.enabled ? null : html` <span class="badge plain">disabled</span>`}</th>
          <td><code>${c.method} ${c.target}${c.path ?? ''}</code><div class="sub">expects ${c.expectedStatus}, every ${c.intervalSeconds ?? '—'} s</div></td>
          <td>${c.lastResult ? html`<${Badge} status=${c.lastResult.result} /> <span class="sub">${c.lastResult.status ?? ''} ${c.lastResult.latencyMs != null ? `${c.lastResult.latencyMs} ms` : ''} ${c.lastResult.message ?? ''}</span>` : 'never run'}</td>
          <td>${when(c.lastResult?.executedAt)}</td>
          <td><${RunButton} base=${base} check=${c} onDone=${list.reload} /></td></tr>`,
      )}</tbody>
    </table></div>
  </${Section}>`;
}
