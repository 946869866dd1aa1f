// A share's traffic policy on its page: who may connect (networks allowed and denied), how often (a rate limit per
// client address), basic auth users, maintenance, and as JSON the header rules and error pages. Saved whole through
// PATCH; every edge applies it within 2 s. Basic auth passwords are never shown: a user listed without a password
// keeps the one it has.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { Problem } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

const lines = (/** @type {string} */ text) =>
  text
    .split(/[\s,]+/)
    .map((l) => l.trim())
    .filter(Boolean);

/** The policy as the form edits it. @param {Json} [policy] */
const formOf = (policy = {}) => ({
  allow: (policy.ipAllow ?? []).join('\n'),
  deny: (policy.ipDeny ?? []).join('\n'),
  requests: policy.rateLimit ? String(policy.rateLimit.requests) : '',
  per: policy.rateLimit?.per ?? 'PT1M',
  by: policy.rateLimit?.by ?? 'client-ip',
  users: (policy.basicAuth ?? []).map((/** @type {Json} */ u) => u.user).join('\n'),
  maintenance: Boolean(policy.maintenance),
  advanced: JSON.stringify({ requestHeaders: policy.requestHeaders, responseHeaders: policy.responseHeaders, errorPages: policy.errorPages }, null, 2),
});
/** @typedef {ReturnType<typeof formOf>} PolicyForm */

/**
 * The policy to send, or throws a message for people; null when it says nothing.
 * @param {PolicyForm} form
 * @param {boolean} tcp
 * @returns {Record<string, unknown> | null}
 */
function policyOf(form, tcp) {
  /** @type {Record<string, unknown>} */
  const policy = {};
  if (lines(form.allow).length) policy.ipAllow = lines(form.allow);
  if (lines(form.deny).length) policy.ipDeny = lines(form.deny);
  if (!tcp) {
    if (form.requests.trim()) policy.rateLimit = { requests: Number(form.requests), per: form.per.trim(), by: form.by };
    const users = form.users
      .split('\n')
      .map((/** @type {string} */ l) => l.trim())
      .filter(Boolean);
    if (users.length) {
      policy.basicAuth = users.map((/** @type {string} */ line) => {
        const colon = line.indexOf(':');
        return colon < 0 ? { user: line } : { user: line.slice(0, colon), password: line.slice(colon + 1) };
      });
    }
    if (form.maintenance) policy.maintenance = true;
    let advanced;
    try {
      advanced = form.advanced.trim() ? JSON.parse(form.advanced) : {};
    } catch (err) {
      const why = /** @type {Error} */ (err).message;
      throw Object.assign(new Error(`Headers and error pages: not JSON (${why})`), { words: `Headers and error pages: not JSON (${why})` });
    }
    for (const key of ['requestHeaders', 'responseHeaders', 'errorPages']) if (advanced?.[key] !== undefined) policy[key] = advanced[key];
  }
  return Object.keys(policy).length ? policy : null;
}

/** @param {{ base: string, share: Json, onSaved: (share: Json) => void }} props */
export function SharePolicy({ base, share, onSaved }) {
  const tcp = share.protocol === 'tcp';
  const [form, setForm] = useState(formOf(share.policy));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [saved, setSaved] = useState(false);
  const set = (/** @type {Partial<PolicyForm>} */ patch) => (setSaved(false), setForm({ ...form, ...patch }));
  const save = async (/** @type {Event} */ event) => {
    event.preventDefault();
    setError(undefined);
    setSaved(false);
    try {
      const updated = await api(`${base}/shares/${share.zId}`, { method: 'PATCH', body: { policy: policyOf(form, tcp) } });
      setForm(formOf(updated.policy));
      setSaved(true);
      onSaved(updated);
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  return html`<form class="form policy" onSubmit=${save} aria-label="Traffic policy">
    <div class="grid">
      <label for="policy-allow">Allowed networks</label>
      <textarea id="policy-allow" rows="3" placeholder="CIDRs, one a line (empty: every address)" value=${form.allow} onInput=${(/** @type {FieldEvent<HTMLTextAreaElement>} */ e) => set({ allow: e.currentTarget.value })}></textarea>
      <label for="policy-deny">Denied networks</label>
      <textarea id="policy-deny" rows="2" placeholder="CIDRs, one a line (deny wins)" value=${form.deny} onInput=${(/** @type {FieldEvent<HTMLTextAreaElement>} */ e) => set({ deny: e.currentTarget.value })}></textarea>
      ${
        tcp
          ? null
          : html`<label for="policy-requests">Rate limit (requests)</label>
            <input id="policy-requests" type="number" min="1" placeholder="none" value=${form.requests} onInput=${(/** @type {FieldEvent} */ e) => set({ requests: e.currentTarget.value })} />
            <label for="policy-per">per (ISO 8601)</label>
            <input id="policy-per" value=${form.per} onInput=${(/** @type {FieldEvent} */ e) => set({ per: e.currentTarget.value })} />
            <label for="policy-by">counted by</label>
            <select id="policy-by" value=${form.by} onChange=${(/** @type {FieldEvent<HTMLSelectElement>} */ e) => set({ by: e.currentTarget.value })}>
              <option value="client-ip">client address</option>
              <option value="identity">identity (certificate, login or user)</option>
            </select>
            <label for="policy-users">Basic auth users</label>
            <textarea id="policy-users" rows="2" placeholder="user:password, one a line (a user alone keeps its password)" value=${form.users} onInput=${(/** @type {FieldEvent<HTMLTextAreaElement>} */ e) => set({ users: e.currentTarget.value })}></textarea>
            <label for="policy-advanced">Headers and error pages (JSON)</label>
            <textarea id="policy-advanced" rows="6" value=${form.advanced} onInput=${(/** @type {FieldEvent<HTMLTextAreaElement>} */ e) => set({ advanced: e.currentTarget.value })}></textarea>`
      }
    </div>
    ${
      tcp
        ? html`<p class="sub">A TCP share's policy takes networks only: a connection from elsewhere is closed.</p>`
        : html`<label class="check"><input type="checkbox" checked=${form.maintenance} onChange=${(/** @type {FieldEvent} */ e) => set({ maintenance: e.currentTarget.checked })} /> Maintenance: answer 503 (with the 503 page) without contacting the target</label>`
    }
    <div class="actions"><button type="submit">Save policy</button> ${saved ? html`<span role="status" class="sub">Policy saved: every edge applies it within 2 s.</span>` : null}</div>
    <${Problem} error=${error} />
  </form>`;
}
