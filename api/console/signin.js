// Sign in with an API key (the hub's view) or the admin token (the operator's view); kept in this tab only.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, whoIs } from './api.js';
import { html } from './html.js';
import { Problem } from './parts.js';

/** @param {{ onSignedIn: (token: string, who: import('./api.js').Who) => void }} props */
export function SignIn({ onSignedIn }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [busy, setBusy] = useState(false);
  const field = useRef(/** @type {HTMLInputElement | null} */ (null));
  useEffect(() => field.current?.focus(), []);
  const submit = async (/** @type {Event} */ event) => {
    event.preventDefault();
    const token = value.trim();
    if (!token) return setError(new Error('Paste an API key or the admin token first.'));
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(token, await whoIs(token));
    } catch (err) {
      setError(
        err instanceof ApiError && (err.status === 401 || err.status === 403)
          ? new Error('This is neither an API key of a hub nor the admin token.')
          : /** @type {Error} */ (err),
      );
      field.current?.focus();
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>edgehub</h1>
    <p>Shares, agents, certificates and traffic of a hub; hubs and keys for the operator.</p>
    <form onSubmit=${submit} aria-describedby="signin-help">
      <label for="credential">API key or admin token</label>
      <input id="credential" ref=${field} type="password" autocomplete="off" spellcheck="false" value=${value} onInput=${(/** @type {FieldEvent} */ e) => setValue(e.currentTarget.value)} />
      <button type="submit" disabled=${busy}>Sign in</button>
      <p id="signin-help" class="hint">It stays in this browser tab only (session storage) until you sign out or close the tab.</p>
      <${Problem} error=${error} />
    </form>
  </main>`;
}
