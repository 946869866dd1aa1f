// The request inspector of a share: recorded exchanges, live from the Server-Sent Events stream, filtered by
// status and path; one exchange's headers and bodies (as text, JSON or hex), and a Replay button.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, credential } from './api.js';
import { bytes, when } from './format.js';
import { html } from './html.js';
import { Problem } from './parts.js';

/** @typedef {import('./api.js').Json} Json */

const MAX_SHOWN = 200;
/** Rows on one page of the list: the share's settings stay near, whatever was recorded. */
const PAGE_SIZE = 20;

/**
 * Follows `${path}` (text/event-stream) with the tab's credential; calls onEvent(summary); reconnects with Last-Event-ID.
 * @param {string} path
 * @param {(summary: Json) => void} onEvent
 * @param {boolean} enabled
 */
function useLive(path, onEvent, enabled) {
  const [state, setState] = useState('connecting');
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    if (!enabled) return undefined;
    let stopped = false;
    /** @type {string | undefined} */
    let last;
    /** @type {AbortController | undefined} */
    let controller;
    const connect = async () => {
      while (!stopped) {
        controller = new AbortController();
        try {
          const res = await fetch(path, {
            headers: { accept: 'text/event-stream', authorization: `Bearer ${credential.get()}`, ...(last ? { 'last-event-id': last } : {}) },
            signal: controller.signal,
          });
          if (!res.ok) throw new Error(`live view: ${res.status}`);
          setState('live');
          const reader = /** @type {ReadableStream<Uint8Array>} */ (res.body).getReader();
          const decoder = new TextDecoder();
          let text = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            text += decoder.decode(value, { stream: true });
            let end;
            while ((end = text.indexOf('\n\n')) >= 0) {
              const block = text.slice(0, end);
              text = text.slice(end + 2);
              const data = block
                .split('\n')
                .filter((l) => l.startsWith('data: '))
                .map((l) => l.slice(6))
                .join('\n');
              const id = block
                .split('\n')
                .find((l) => l.startsWith('id: '))
                ?.slice(4);
              if (id) last = id;
              if (data) handler.current(JSON.parse(data));
            }
          }
        } catch {
          /* reconnect below */
        }
        if (stopped) return;
        setState('reconnecting');
        await new Promise((r) => setTimeout(r, 2000));
      }
    };
    void connect();
    return () => {
      stopped = true;
      controller?.abort();
    };
  }, [path, enabled]);
  return state;
}

const decode = (/** @type {string | undefined} */ b64) => Uint8Array.from(atob(b64 ?? ''), (c) => c.charCodeAt(0));

/** @param {Uint8Array} bytesArray */
function utf8(bytesArray) {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytesArray);
  } catch {
    return undefined;
  }
}

/** @param {Uint8Array} data */
function hexDump(data) {
  const lines = [];
  for (let i = 0; i < data.length; i += 16) {
    const row = data.slice(i, i + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${i.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join('\n');
}

/**
 * A body as text, pretty JSON or hex; bytes that are not UTF-8 are only ever shown as hex.
 * @param {{ message: Json, label: string }} props
 */
function Body({ message, label }) {
  const data = useMemo(() => decode(message.body), [message.body]);
  const text = useMemo(() => utf8(data), [data]);
  const json = useMemo(() => {
    if (text === undefined || !text.trim()) return undefined;
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return undefined;
    }
  }, [text]);
  const [mode, setMode] = useState(json !== undefined ? 'json' : text !== undefined ? 'text' : 'hex');
  if (!data.length) return html`<p class="sub">No body.</p>`;
  const shown = mode === 'json' && json !== undefined ? json : mode === 'text' && text !== undefined ? text : hexDump(data);
  return html`<div class="body-view">
    <div class="window-picker" role="group" aria-label=${`${label} body as`}>
      ${
        /** @type {[string, string, boolean][]} */ ([
          ['text', 'Text', text !== undefined],
          ['json', 'JSON', json !== undefined],
          ['hex', 'Hex', true],
        ]).map(
          ([id, name, ok]) =>
            html`<button type="button" disabled=${!ok} aria-pressed=${mode === id ? 'true' : 'false'} onClick=${() => setMode(id)}>${name}</button>`,
        )
      }
      <span class="sub">${bytes(data.length)}${message.bodyTruncated ? ' shown: the body was longer (cut at HUB_INSPECT_BODY_BYTES)' : ''}${text === undefined ? ' · not UTF-8' : ''}</span>
    </div>
    <pre class=${`body ${mode}`} data-mode=${mode}>${shown}</pre>
  </div>`;
}

/** @param {{ pairs: [string, string][], caption: string }} props */
const Headers = ({ pairs, caption }) => html`<table class="headers">
  <caption class="sr-only">${caption}</caption>
  <tbody>${pairs.map(([n, v], i) => html`<tr key=${i}><th scope="row">${n}</th><td class=${v === '[redacted]' ? 'redacted' : ''}>${v}</td></tr>`)}</tbody>
</table>`;

/**
 * @param {{ base: string, zId: string, id: string, onReplayed: (made: Json) => void, onClose: () => void }} props
 */
function Detail({ base, zId, id, onReplayed, onClose }) {
  const [detail, setDetail] = useState(/** @type {import('./api.js').Json} */ (undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setDetail(undefined);
    setError(undefined);
    api(`${base}/shares/${zId}/requests/${id}`).then(setDetail, setError);
  }, [id]);
  const replay = async () => {
    setBusy(true);
    setError(undefined);
    try {
      onReplayed(await api(`${base}/shares/${zId}/requests/${id}/replay`, { method: 'POST' }));
    } catch (err) {
      setError(/** @type {Error} */ (err));
    } finally {
      setBusy(false);
    }
  };
  if (!detail) return html`<aside class="detail card"><${Problem} error=${error} />${error ? null : html`<p class="loading">Loading…</p>`}</aside>`;
  return html`<aside class="detail card" aria-label="Request detail" data-request=${detail.id}>
    <header class="section-head">
      <h3><code>${detail.method} ${detail.path}</code> <span class=${`status s${String(detail.status)[0]}`}>${detail.status}</span></h3>
      <button type="button" onClick=${replay} disabled=${busy}>${busy ? 'Replaying…' : 'Replay'}</button>
      <button type="button" onClick=${onClose} aria-label="Close the detail">Close</button>
    </header>
    <p class="sub">${when(detail.at)} · ${detail.ms} ms · received ${bytes(detail.rxBytes)}, sent ${bytes(detail.txBytes)} · from ${detail.clientAddress} · edge <code>${detail.edge}</code>${detail.replayOf ? html` · replay of <code>${detail.replayOf}</code>` : ''}</p>
    <${Problem} error=${error} />
    <div class="exchange">
      <section><h4>Request</h4><${Headers} pairs=${detail.request.headers} caption="Request headers" /><${Body} message=${detail.request} label="Request" /></section>
      <section><h4>Response</h4><${Headers} pairs=${detail.response.headers} caption="Response headers" /><${Body} message=${detail.response} label="Response" /></section>
    </div>
  </aside>`;
}

const statusClass = (/** @type {number} */ status) => `status s${String(status)[0]}`;

/** @param {{ base: string, share: Json }} props */
export function Requests({ base, share }) {
  const zId = share.zId;
  const [items, setItems] = useState(/** @type {import('./api.js').Json[] | undefined} */ (undefined));
  const [error, setError] = useState(/** @type {import('./api.js').ViewError} */ (undefined));
  const [selected, setSelected] = useState(/** @type {string | undefined} */ (undefined));
  const [status, setStatus] = useState('');
  const [pathFilter, setPathFilter] = useState('');
  const [page, setPage] = useState(0);
  useEffect(() => {
    api(`${base}/shares/${zId}/requests`).then(setItems, setError);
  }, [zId]);
  const live = useLive(
    `${base}/shares/${zId}/requests/live`,
    (/** @type {Json} */ summary) => setItems((list) => [summary, ...(list ?? []).filter((e) => e.id !== summary.id)].slice(0, MAX_SHOWN)),
    Boolean(share.inspect),
  );
  const matching = (items ?? []).filter((e) => (!status || String(e.status)[0] === status[0]) && (!pathFilter || e.path.includes(pathFilter)));
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const shown = matching.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  if (!share.inspect)
    return html`<p class="empty">Request inspection is off for this share. Turn on <strong>Inspect requests</strong> in its settings below to record the next exchanges; you can then read them here and send one again.</p>`;
  return html`<div class="requests">
    <div class="filters">
      <label for="req-status">Status</label>
      <select id="req-status" value=${status} onChange=${(/** @type {FieldEvent<HTMLSelectElement>} */ e) => (setStatus(e.currentTarget.value), setPage(0))}>
        <option value="">any</option><option value="2xx">2xx</option><option value="3xx">3xx</option><option value="4xx">4xx</option><option value="5xx">5xx</option>
      </select>
      <label for="req-path">Path contains</label>
      <input id="req-path" value=${pathFilter} onInput=${(/** @type {FieldEvent} */ e) => (setPathFilter(e.currentTarget.value), setPage(0))} placeholder="/api" />
      <span class=${`live ${live}`} role="status">${live === 'live' ? 'live' : live}</span>
    </div>
    <${Problem} error=${error} />
    ${items && !items.length ? html`<p class="empty">No requests recorded yet. Send one to <a href=${share.frontendEndpoint} target="_blank" rel="noopener noreferrer">${share.frontendEndpoint}</a>: it appears here as it happens.</p>` : null}
    ${items && items.length && !matching.length ? html`<p class="empty">No request matches the filter.</p>` : null}
    <div class="inspector">
      <div class="table-wrap"><table class="request-list">
        <caption class="sr-only">Recorded requests, newest first</caption>
        <thead><tr><th scope="col">When</th><th scope="col" class="request">Request</th><th scope="col">Status</th><th scope="col" class="extra">Time</th><th scope="col" class="extra">Size</th></tr></thead>
        <tbody>${shown.map(
          (e) => html`<tr key=${e.id} data-request=${e.id} class=${selected === e.id ? 'selected' : ''} onClick=${() => setSelected(e.id)}>
            <td class="sub">${new Date(e.at).toLocaleTimeString()}</td>
            <th scope="row" class="request"><button type="button" class="link" onClick=${() => setSelected(e.id)} title=${`${e.method} ${e.path}`}><code>${e.method} ${e.path}</code></button>${e.replayOf ? html` <span class="badge plain">replay</span>` : null}</th>
            <td><span class=${statusClass(e.status)}>${e.status}</span></td>
            <td class="extra">${e.ms} ms</td>
            <td class="sub extra">${bytes(e.rxBytes)} / ${bytes(e.txBytes)}</td>
          </tr>`,
        )}</tbody>
      </table>
      ${
        pages > 1
          ? html`<nav class="pager" aria-label="Recorded requests pages">
            <button type="button" disabled=${current === 0} onClick=${() => setPage(current - 1)}>Previous</button>
            <span>Page ${current + 1} of ${pages} (${matching.length} requests)</span>
            <button type="button" disabled=${current + 1 >= pages} onClick=${() => setPage(current + 1)}>Next</button>
          </nav>`
          : null
      }</div>
      ${selected ? html`<${Detail} base=${base} zId=${zId} id=${selected} onClose=${() => setSelected(undefined)} onReplayed=${(/** @type {Json} */ made) => (setItems((list) => [made, ...(list ?? []).filter((e) => e.id !== made.id)]), setSelected(made.id))} />` : null}
    </div>
  </div>`;
}
