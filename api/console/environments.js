// Environments, their reach and their agents (online or not); a button makes an agent enrollment and shows the
// commands to run (install the served agent package, enroll).
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { installLine, when } from './format.js';
import { html } from './html.js';
import { Badge, CopyButton, Pager, Problem, Section, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

const anyConnected = (/** @type {Json} */ e) => (e.agents ?? []).some((/** @type {Json} */ a) => a.connected);

/**
 * How the edge reaches an environment's targets, as a badge.
 * @param {{ env: Json }} props
 */
const Reach = ({ env }) =>
  env.reach === 'agent'
    ? html`<span class="badge ${anyConnected(env) ? 'good' : 'bad'}" data-reach="agent" title="served only through its agents">reach: agents${anyConnected(env) ? '' : ' (none connected)'}</span>`
    : html`<span class="badge plain" data-reach="edge" title="the edge connects to its targets itself">reach: edge</span>`;

/** A connected agent's place in its environment's pool: weight, priority, draining, targets it reports down. */
const poolState = (/** @type {Json} */ a) =>
  html`${' '}<span class="sub" data-pool>weight ${a.weight ?? 1}, priority ${a.priority ?? 0}</span>${a.draining ? html`${' '}<span class="badge busy" data-draining title="it takes no new requests and stops once those in flight finish">draining</span>` : ''}${
    a.targetsDown?.length
      ? html`${' '}<span class="badge bad" data-targets-down title="shares whose target this agent reports it cannot reach">target down: ${a.targetsDown.join(', ')}</span>`
      : ''
  }`;

/**
 * The environments of these ids with their agents, polled (the shares view marks shares no agent serves).
 * @param {string} base
 * @param {string[]} envZIds
 * @returns {Map<string, Json>}
 */
export function useEnvironmentStates(base, envZIds) {
  const ids = [...new Set(envZIds)].sort();
  const states = usePoll(
    async () =>
      new Map(await Promise.all(ids.map(async (id) => /** @type {[string, import('./api.js').Json]} */ ([id, await api(`${base}/environments/${id}`)])))),
    [base, ids.join(',')],
    10_000,
  );
  return states.data ?? new Map();
}

/**
 * An environment as people know it: its description (the id on hover and in the environments view), `default` for
 * the hub's default one; the bare id only while the environment is loading.
 * @param {{ envZId: string, env: Json }} props
 */
export const EnvName = ({ envZId, env }) =>
  html`<span class="env-name" data-env-name=${envZId} title=${envZId}>${env ? env.description || (env.default ? 'default environment' : 'environment') : html`<code>${envZId}</code>`}${env?.default && env.description && env.description !== 'default' ? html` <span class="badge plain">default</span>` : null}</span>`;

/**
 * A share's status: an ACTIVE share of an environment reached only through agents, with none connected, says so.
 * @param {{ share: Json, env: Json }} props
 */
export const ShareStatus = ({ share, env }) =>
  share.status === 'ACTIVE' && env?.reach === 'agent' && !anyConnected(env)
    ? html`<span class="badge bad" data-no-agent title="its environment is reached only through its agents; the edge answers 502 until one connects">no agent connected</span>`
    : html`<${Badge} status=${share.status} />`;

/** @param {{ base: string, envZId: string }} props */
function AgentEnrollment({ base, envZId }) {
  const [made, setMade] = useState(/** @type {import('./api.js').Json} */ (undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const make = async () => {
    setError(undefined);
    try {
      setMade(await api(`${base}/environments/${envZId}/agent-enrollment`, { method: 'POST', body: {} }));
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  // the agent package as the service serves it (never a bare name a public registry would be asked for)
  const command = made && `${installLine(made.url)}\nedgehub agent enroll ${made.jwt}`;
  return html`<div class="enroll">
    <button type="button" onClick=${make}>Add an agent</button>
    <${Problem} error=${error} />
    ${
      made &&
      html`<div class="reveal" role="status">
      <p>On the machine inside the private network (Node 20 or later), run (valid until ${when(made.expiresAt)}, once), then <code>edgehub agent run</code>:</p>
      <pre><code>${command}</code></pre>
      <${CopyButton} text=${command} label="Copy the command" />
    </div>`
    }
  </div>`;
}

/** @param {{ base: string }} props */
export function Environments({ base }) {
  const [page, setPage] = useState(0);
  const list = usePoll(
    async () => {
      const envs = await api(`${base}/environments?page=${page}&size=10&sort=createdAt,desc`);
      // each environment with its agents and where they are connected
      const full = await Promise.all(envs.content.map((/** @type {Json} */ e) => api(`${base}/environments/${e.envZId}`)));
      return { ...envs, content: full };
    },
    [base, page],
    10_000,
  );
  return html`<${Section} title="Environments">
    <${Problem} error=${list.error} />
    ${(list.data?.content ?? []).map(
      (/** @type {Json} */ e) => html`<article class="card" key=${e.envZId} data-env=${e.envZId}>
        <h3>${e.description || 'environment'} <code>${e.envZId}</code> ${e.default ? html`<span class="badge plain">default</span>` : null} <${Reach} env=${e} /></h3>
        ${
          e.agents?.length
            ? html`<ul class="agents">
              ${e.agents.map(
                (/** @type {Json} */ a) =>
                  html`<li key=${a.id} data-agent=${a.id}><${Badge} status=${a.connected ? 'online' : 'offline'} /> agent <code>${a.id}</code>${' '}<span class="sub">${a.connected ? `connected since ${when(a.connectedAt)} to ${a.edges.join(', ')}` : a.lastSeenAt ? `last seen ${when(a.lastSeenAt)}` : 'enrolled, never connected'}</span>${a.connected ? poolState(a) : ''}</li>`,
              )}
            </ul>`
            : html`<p class="sub">${e.reach === 'agent' ? 'No agents: its shares answer 502 until an agent connects (reach is agents; the edge never connects to these targets itself).' : "No agents: the edge connects to this environment's targets itself."}</p>`
        }
        <${AgentEnrollment} base=${base} envZId=${e.envZId} />
      </article>`,
    )}
    <${Pager} page=${list.data} onPage=${setPage} label="Environments" />
  </${Section}>`;
}
