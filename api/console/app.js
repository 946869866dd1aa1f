// The console: sign-in, then the hub's view (an API key) or the operator's (the admin token), one view per tab.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { credential, whoIs } from './api.js';
import { Certificates } from './certificates.js';
import { Environments } from './environments.js';
import { Executions } from './executions.js';
import { Frontends } from './frontends.js';
import { Health } from './health.js';
import { html } from './html.js';
import { Hubs } from './hubs.js';
import { Ipsec } from './ipsec.js';
import { Problem } from './parts.js';
import { SharePage } from './sharepage.js';
import { Shares } from './shares.js';
import { SignIn } from './signin.js';

/** A tab: its id (the URL's hash), its label, the view it shows. @typedef {[string, string, (props: { base: string }) => unknown]} Tab */

/** @type {Tab[]} */
const HUB_VIEWS = [
  ['shares', 'Shares', Shares],
  ['environments', 'Environments & agents', Environments],
  ['certificates', 'Certificates', Certificates],
  ['frontends', 'Custom frontends', Frontends],
  ['ipsec', 'IPsec', Ipsec],
  ['health', 'Health checks', Health],
  ['executions', 'Executions', Executions],
];
/** @type {Tab[]} */
const OPERATOR_VIEWS = [['hubs', 'Hubs', Hubs]];

const currentView = () => location.hash.replace(/^#\/?/, '');
/** `#/shares/{zId}`: one share's page (under the Shares tab). */
const sharePage = () => /^shares\/([^/]+)$/.exec(currentView())?.[1];

/** @param {{ who: import('./api.js').Who, onSignOut: () => void }} props */
function Shell({ who, onSignOut }) {
  const views = who.role === 'operator' ? OPERATOR_VIEWS : HUB_VIEWS;
  const [view, setView] = useState(() => (views.some(([id]) => id === currentView()) ? currentView() : views[0][0]));
  const [shareId, setShareId] = useState(() => (who.role === 'hub' ? sharePage() : undefined));
  const main = useRef(/** @type {HTMLElement | null} */ (null));
  useEffect(() => {
    const follow = () => {
      setShareId(who.role === 'hub' ? sharePage() : undefined);
      if (who.role === 'hub' && sharePage()) return setView('shares');
      if (views.some(([id]) => id === currentView())) setView(currentView());
    };
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  const go = (/** @type {string} */ id) => {
    location.hash = `#/${id}`;
    setView(id);
    setShareId(undefined);
    main.current?.focus();
  };
  const [, , View] = views.find(([id]) => id === view) ?? views[0];
  const base = who.role === 'hub' ? `/hub/v2/${encodeURIComponent(who.hubId)}` : undefined;
  return html`<div class="shell">
    <header class="top">
      <strong class="brand">edgehub</strong>
      <span class="who">${who.role === 'operator' ? 'Operator' : html`Hub <strong>${who.name}</strong> <code>${who.hubId}</code>`}</span>
      <button type="button" onClick=${onSignOut}>Sign out</button>
    </header>
    <nav class="tabs" aria-label="Views">
      ${views.map(([id, label]) => html`<a href=${`#/${id}`} aria-current=${id === view ? 'page' : undefined} onClick=${(/** @type {Event} */ e) => (e.preventDefault(), go(id))}>${label}</a>`)}
    </nav>
    <main ref=${main} tabindex="-1" id="main">${shareId ? html`<${SharePage} key=${shareId} base=${base} zId=${decodeURIComponent(shareId)} />` : html`<${View} base=${base} />`}</main>
  </div>`;
}

function App() {
  const [who, setWho] = useState(/** @type {import('./api.js').Who | undefined} */ (undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [checking, setChecking] = useState(Boolean(credential.get()));
  useEffect(() => {
    const token = credential.get();
    if (!token) return;
    // a reload keeps the tab signed in: ask again who the stored credential is
    whoIs(token)
      .then(setWho, (err) => {
        if (err.status === 401 || err.status === 403) credential.forget();
        setError(/** @type {Error} */ (err));
      })
      .finally(() => setChecking(false));
  }, []);
  if (checking) return html`<p class="loading">Signing in…</p>`;
  if (!who)
    return html`<div><${SignIn} onSignedIn=${(/** @type {string} */ token, /** @type {import('./api.js').Who} */ found) => (credential.set(token), setError(undefined), setWho(found))} /><${Problem} error=${error} /></div>`;
  return html`<${Shell} who=${who} onSignOut=${() => (credential.forget(), (location.hash = ''), setWho(undefined))} />`;
}

const root = /** @type {HTMLElement} */ (document.getElementById('app'));
root.textContent = ''; // the "Loading" line: the app draws the page from here
render(html`<${App} />`, root);
