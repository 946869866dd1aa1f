// Environments and their agents (online or not); a button makes an agent enrollment and shows the command to run.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { when } from './format.js';
import { html } from './html.js';
import { Badge, CopyButton, Pager, Problem, Section, usePoll } from './parts.js';

function AgentEnrollment({ base, envZId }) {
  const [made, setMade] = useState(undefined);
  const [error, setError] = useState(undefined);
  const make = async () => {
    setError(undefined);
    try {
      setMade(await api(`${base}/environments/${envZId}/agent-enrollment`, { method: 'POST', body: {} }));
    } catch (err) {
      setError(err);
    }
  };
  const command = made && `npx edgehub agent enroll ${made.jwt}`;
  return html`<div class="enroll">
    <button type="button" onClick=${make}>Add an agent</button>
    <${Problem} error=${error} />
    ${made &&
    html`<div class="reveal" role="status">
      <p>On the machine inside the private network, run (valid until ${when(made.expiresAt)}, once), then <code>npx edgehub agent run</code>:</p>
      <pre><code>${command}</code></pre>
      <${CopyButton} text=${command} label="Copy the command" />
    </div>`}
  </div>`;
}

export function Environments({ base }) {
  const [page, setPage] = useState(0);
  const list = usePoll(
    async () => {
      const envs = await api(`${base}/environments?page=${page}&size=10&sort=createdAt,desc`);
      // each environment with its agents and where they are connected
      const full = await Promise.all(envs.content.map((e) => api(`${base}/environments/${e.envZId}`)));
      return { ...envs, content: full };
    },
    [base, page],
    10_000,
  );
  return html`<${Section} title="Environments">
    <${Problem} error=${list.error} />
    ${(list.data?.content ?? []).map(
      (e) => html`<article class="card" key=${e.envZId} data-env=${e.envZId}>
        <h3>${e.description || 'environment'} <code>${e.envZId}</code> ${e.default ? html`<span class="badge plain">default</span>` : null}</h3>
        ${e.agents?.length
          ? html`<ul class="agents">
              ${e.agents.map(
                (a) => html`<li key=${a.id}><${Badge} status=${a.connected ? 'online' : 'offline'} /> agent <code>${a.id}</code>
                  <span class="sub">${a.connected ? `connected since ${when(a.connectedAt)} to ${a.edges.join(', ')}` : `last seen ${when(a.lastSeenAt)}`}</span></li>`,
              )}
            </ul>`
          : html`<p class="sub">No agents: the edge connects to this environment's targets itself.</p>`}
        <${AgentEnrollment} base=${base} envZId=${e.envZId} />
      </article>`,
    )}
    <${Pager} page=${list.data} onPage=${setPage} label="Environments" />
  </${Section}>`;
}
