// Client certificates and certificate request tokens; a new token shows its enrollment JWT and the commands a
// recipient runs (install the served package, enroll).
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { installLine, when } from './format.js';
import { html } from './html.js';
import { CopyButton, Pager, Problem, Section, usePoll } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

/** @param {{ base: string, onMade: () => void }} props */
function NewToken({ base, onMade }) {
  const [name, setName] = useState('');
  const [commonName, setCommonName] = useState('');
  const [made, setMade] = useState(/** @type {import('./api.js').Json} */ (undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const token = await api(`${base}/certificate-request-tokens`, {
        method: 'POST',
        body: { name: name.trim(), ...(commonName.trim() ? { commonName: commonName.trim() } : {}) },
      });
      const jwt = await api(`${base}/certificate-request-tokens/${token.id}/enrollment-jwt`);
      setMade({ token, jwt });
      setName('');
      setCommonName('');
      onMade();
    } catch (err) {
      setError(/** @type {Error} */ (err));
    }
  };
  // the served package, never a bare name a public registry would be asked for
  const command = made && `${installLine(made.jwt.url)}\nedgehub enroll ${made.jwt.jwt}`;
  return html`<form class="inline" onSubmit=${submit}>
    <label for="token-name">Name</label>
    <input id="token-name" required value=${name} onInput=${(/** @type {FieldEvent} */ e) => setName(e.currentTarget.value)} />
    <label for="token-cn">Common name (optional)</label>
    <input id="token-cn" value=${commonName} onInput=${(/** @type {FieldEvent} */ e) => setCommonName(e.currentTarget.value)} />
    <button type="submit">Create token</button>
    <${Problem} error=${error} />
    ${
      made &&
      html`<div class="reveal" role="status">
      <p>Token <strong>${made.token.name}</strong> made. The recipient runs (the JWT is valid until ${when(made.jwt.expiresAt)}):</p>
      <pre><code id="enroll-command">${command}</code></pre>
      <${CopyButton} text=${command} label="Copy the command" />
      <p class="sub">It writes the certificate, its key and <code>frontend-ca.pem</code>: the CA to trust for the <code>https://</code> shares (also here: <a href="/hub/v2/public/frontend-ca.pem" download="frontend-ca.pem">frontend-ca.pem</a>).</p>
    </div>`
    }
  </form>`;
}

/**
 * A token's Revoke button: deletes it (its enrollment JWTs enroll nothing afterwards).
 * @param {{ base: string, token: Json, onDone: () => Promise<void>, onError: (error: import('./api.js').ViewError) => void }} props
 */
function RevokeToken({ base, token, onDone, onError }) {
  const [busy, setBusy] = useState(false);
  const revoke = async () => {
    setBusy(true);
    onError(undefined);
    try {
      await api(`${base}/certificate-request-tokens/${token.id}`, { method: 'DELETE' });
      await onDone();
    } catch (err) {
      onError(/** @type {Error} */ (err));
    } finally {
      setBusy(false);
    }
  };
  return html`<button type="button" class="danger" disabled=${busy} onClick=${revoke} aria-label=${`Revoke ${token.name}`} title="Deletes the token: its enrollment JWTs enroll nothing more">Revoke</button>`;
}

/** @param {{ base: string }} props */
export function Certificates({ base }) {
  const [revokeError, setRevokeError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [certPage, setCertPage] = useState(0);
  const [tokenPage, setTokenPage] = useState(0);
  const certs = usePoll(() => api(`${base}/client-certificates?page=${certPage}&size=20`), [base, certPage], 30_000);
  const tokens = usePoll(() => api(`${base}/certificate-request-tokens?page=${tokenPage}&size=20&sort=createdAt,desc`), [base, tokenPage], 30_000);
  return html`<div>
    <${Section} title="Certificate request tokens">
      <${NewToken} base=${base} onMade=${tokens.reload} />
      <${Problem} error=${tokens.error ?? revokeError} />
      ${tokens.data && !tokens.data.content.length ? html`<p class="empty">No certificate request tokens yet. Create one above: the recipient gets the command that enrolls a client certificate with it.</p>` : null}
      ${
        tokens.data?.content.length
          ? html`<div class="table-wrap"><table class="tokens">
        <thead><tr><th scope="col">Name</th><th scope="col">Subject</th><th scope="col">Valid (years)</th><th scope="col">Expires</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>${tokens.data.content.map(
          (
            /** @type {Json} */ t,
          ) => html`<tr key=${t.id} data-token=${t.id}><th scope="row">${t.name}</th><td>${[t.commonName && `CN=${t.commonName}`, t.organization && `O=${t.organization}`, t.organizationalUnit && `OU=${t.organizationalUnit}`].filter(Boolean).join(', ') || '—'}</td><td>${t.validYears ?? '—'}</td><td>${when(t.expiresAt)}</td><td>${when(t.createdAt)}</td>
            <td><${RevokeToken} base=${base} token=${t} onDone=${tokens.reload} onError=${setRevokeError} /></td></tr>`,
        )}</tbody>
      </table></div>`
          : null
      }
      <${Pager} page=${tokens.data} onPage=${setTokenPage} label="Tokens" />
    </${Section}>
    <${Section} title="Client certificates">
      <${Problem} error=${certs.error} />
      ${certs.data && !certs.data.content.length ? html`<p class="empty">No client certificates yet: a recipient's <code>edgehub enroll</code> with a token above makes one (it also writes <code>frontend-ca.pem</code>, the CA to trust for the <code>https://</code> shares), or upload one or sign a CSR through the API.</p>` : null}
      ${
        certs.data?.content.length
          ? html`<div class="table-wrap"><table class="certificates">
        <thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Created</th><th scope="col">By</th></tr></thead>
        <tbody>${certs.data.content.map((/** @type {Json} */ c) => html`<tr key=${c.id}><th scope="row">${c.name}</th><td><code>${c.id}</code></td><td>${when(c.createdAt)}</td><td>${c.createdBy}</td></tr>`)}</tbody>
      </table></div>`
          : null
      }
      <${Pager} page=${certs.data} onPage=${setCertPage} label="Certificates" />
    </${Section}>
  </div>`;
}
