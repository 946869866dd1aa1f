// IPsec tunnels (with the security association as charon reports it) and IPsec shares.
import { ApiError, api } from './api.js';
import { html } from './html.js';
import { EnvName, useEnvironmentStates } from './environments.js';
import { Badge, Problem, Section, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

/** @param {{ base: string }} props */
export function Ipsec({ base }) {
  const data = usePoll(
    async () => {
      const tunnels = await api(`${base}/ipsec-tunnels?size=50`);
      const withState = await Promise.all(
        tunnels.content.map(async (/** @type {Json} */ t) => ({
          ...t,
          sa: t.status === 'DEPLOYED' ? (await api(`${base}/ipsec-tunnels/${t.id}/tunnel-config`).catch(() => undefined))?.tunnels?.[0] : undefined,
        })),
      );
      const shares = await api(`${base}/ipsec-shares?size=50`);
      return { tunnels: withState, shares: shares.content };
    },
    [base],
    10_000,
  );
  const envs = useEnvironmentStates(
    base,
    (data.data?.shares ?? []).map((/** @type {Json} */ s) => s.envZId),
  );
  if (data.error instanceof ApiError && data.error.status === 403)
    return html`<${Section} title="IPsec"><p class="empty">IPsec is not enabled for this hub (the operator turns it on with the hub's <code>features</code>).</p></${Section}>`;
  return html`<div>
    <${Section} title="IPsec tunnels">
      <${Problem} error=${data.error} />
      ${data.data && !data.data.tunnels.length ? html`<p class="empty">No IPsec tunnels.</p>` : null}
      <div class="table-wrap"><table>
        <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Security association</th><th scope="col">Peer</th><th scope="col">Outside address</th><th scope="col">Load balancer</th></tr></thead>
        <tbody>${(data.data?.tunnels ?? []).map(
          (t) => html`<tr key=${t.id}><th scope="row">${t.name}</th><td><${Badge} status=${t.status} /></td>
            <td>${t.sa ? html`<${Badge} status=${t.sa.status} /> <span class="sub">${t.sa.statusMessage}</span>` : '—'}</td>
            <td>${t.peerPublicIp}<div class="sub">${t.peerCidr}</div></td><td>${t.outsideIpAddress ?? '—'}</td><td>${t.nlbPrivateIp ?? '—'}</td></tr>`,
        )}</tbody>
      </table></div>
    </${Section}>
    <${Section} title="IPsec shares">
      <div class="table-wrap"><table>
        <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Listener</th><th scope="col">Target</th><th scope="col">Environment</th></tr></thead>
        <tbody>${(data.data?.shares ?? []).map(
          (/** @type {Json} */ s) =>
            html`<tr key=${s.id}><th scope="row">${s.name}</th><td><${Badge} status=${s.status} /></td><td>port ${s.ingressPort}</td><td><code>${s.target}</code></td><td><${EnvName} envZId=${s.envZId} env=${envs.get(s.envZId)} /></td></tr>`,
        )}</tbody>
      </table></div>
    </${Section}>
  </div>`;
}
