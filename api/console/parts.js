// Pieces every view uses: a status badge, an error line, a pager, a copy button, a polling hook, a section.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from './html.js';
import { tone } from './format.js';

/** @typedef {import('./api.js').ViewError} ViewError */

/** @param {{ status: string }} props */
export const Badge = ({ status }) => html`<span class="badge ${tone(status)}">${status}</span>`;

/** An API error in words, announced to screen readers. @param {{ error?: { message: string, words?: string } | null }} props */
export const Problem = ({ error }) => (error ? html`<p class="problem" role="alert">${error.words ?? error.message}</p>` : null);

/**
 * Previous / next over the API's page envelope.
 * @param {{ page: { totalPages: number, totalElements: number, pageable: { pageNumber: number } } | undefined, onPage: (n: number) => void, label: string }} props
 */
export function Pager({ page, onPage, label }) {
  if (!page || page.totalPages <= 1) return null;
  const n = page.pageable.pageNumber;
  return html`<nav class="pager" aria-label=${`${label} pages`}>
    <button type="button" disabled=${n === 0} onClick=${() => onPage(n - 1)}>Previous</button>
    <span>Page ${n + 1} of ${page.totalPages} (${page.totalElements})</span>
    <button type="button" disabled=${n + 1 >= page.totalPages} onClick=${() => onPage(n + 1)}>Next</button>
  </nav>`;
}

/** @param {{ text: string, label?: string }} props */
export function CopyButton({ text, label = 'Copy' }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
      setTimeout(() => setDone(false), 1500);
    } catch {
      setDone(false);
    }
  };
  return html`<button type="button" class="copy" onClick=${copy}>${done ? 'Copied' : label}</button>`;
}

/**
 * Loads `load()` now, again every `everyMs` while the tab is visible, and whenever `deps` change; returns
 * {data, error, reload}. One request at a time: a slow answer is never overtaken by the next poll.
 * @template T
 * @param {() => Promise<T>} load
 * @param {unknown[]} deps
 * @param {number} [everyMs]
 * @returns {{ data: T | undefined, error: ViewError, reload: () => Promise<void> }}
 */
export function usePoll(load, deps, everyMs = 10_000) {
  const [state, setState] = useState(/** @type {{ data: T | undefined, error: ViewError }} */ ({ data: undefined, error: undefined }));
  const busy = useRef(false);
  const alive = useRef(true);
  const run = async () => {
    if (busy.current) return;
    busy.current = true;
    try {
      const data = await load();
      if (alive.current) setState({ data, error: undefined });
    } catch (error) {
      if (alive.current) setState((s) => ({ data: s.data, error: /** @type {Error} */ (error) }));
    } finally {
      busy.current = false;
    }
  };
  useEffect(() => {
    alive.current = true;
    void run();
    const timer = everyMs ? setInterval(() => document.visibilityState === 'visible' && run(), everyMs) : undefined;
    return () => {
      alive.current = false;
      clearInterval(timer);
    };
  }, deps);
  return { ...state, reload: run };
}

/** @param {{ title: string, children?: unknown, actions?: unknown }} props */
export const Section = ({ title, children, actions }) => html`<section aria-labelledby=${`h-${title}`}>
  <header class="section-head"><h2 id=${`h-${title}`}>${title}</h2>${actions}</header>
  ${children}
</section>`;
