// Traffic as people read it: rx and tx rates (bytes per second) per time bucket, as bars on a time axis (uPlot).
// Buckets with no traffic are drawn as zero, so a burst shows where and how long it was, not as a one-pixel line.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { bytes } from './format.js';
import { html } from './html.js';

/** The windows a person chooses from: label, ISO duration, step for a chart, step for a list's small chart. */
const WINDOWS = [
  { id: '1h', label: '1 h', duration: 'PT1H', ms: 3_600_000, step: 'PT1M', stepMs: 60_000, smallStep: 'PT2M', smallStepMs: 120_000 },
  { id: '24h', label: '24 h', duration: 'P1D', ms: 86_400_000, step: 'PT15M', stepMs: 900_000, smallStep: 'PT1H', smallStepMs: 3_600_000 },
  { id: '7d', label: '7 d', duration: 'P7D', ms: 604_800_000, step: 'PT1H', stepMs: 3_600_000, smallStep: 'PT6H', smallStepMs: 21_600_000 },
];
/** @typedef {typeof WINDOWS[number]} Window */
/** @param {string} id @returns {Window} */
export const windowOf = (id) => WINDOWS.find((w) => w.id === id) ?? WINDOWS[0];

const rate = (/** @type {number} */ n) => `${bytes(Math.round(n))}/s`;

/** @typedef {{ rx: number, tx: number, timestamp?: string | null }} Sample */

/**
 * Every bucket of the window ending now, with the samples' bytes as rates (bytes/s) in their buckets.
 * @param {Sample[] | undefined} samples
 * @param {number} windowMs
 * @param {number} stepMs
 * @param {number} [now]
 * @returns {{ data: [number[], number[], number[]], totalRx: number, totalTx: number, peak: number }}
 */
function buckets(samples, windowMs, stepMs, now = Date.now()) {
  const end = Math.floor(now / stepMs) * stepMs + stepMs;
  const start = end - Math.ceil(windowMs / stepMs) * stepMs;
  const n = Math.round((end - start) / stepMs);
  const t = Array.from({ length: n }, (_, i) => (start + i * stepMs) / 1000);
  const rx = new Array(n).fill(0);
  const tx = new Array(n).fill(0);
  let totalRx = 0;
  let totalTx = 0;
  for (const s of samples ?? []) {
    if (!s.timestamp) continue;
    const i = Math.floor((Date.parse(s.timestamp) - start) / stepMs);
    if (i < 0 || i >= n) continue;
    rx[i] += s.rx / (stepMs / 1000);
    tx[i] += s.tx / (stepMs / 1000);
    totalRx += s.rx;
    totalTx += s.tx;
  }
  return { data: [t, rx, tx], totalRx, totalTx, peak: Math.max(0, ...rx, ...tx) };
}

/** @param {string} name @param {string} fallback */
const css = (name, fallback) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

/**
 * @param {{ width: number, height: number, compact: boolean, stepMs: number }} props
 * @returns {uPlot.Options}
 */
function options({ width, height, compact, stepMs }) {
  const bars = (/** @type {number} */ i) =>
    /** @type {uPlot.Series.BarsPathBuilderFactory} */ (uPlot.paths.bars)({ size: [0.46, 64, 3], align: i === 1 ? -1 : 1 });
  /** @param {string} label @param {string} color @param {number} i @returns {uPlot.Series} */
  const series = (label, color, i) => ({
    label,
    stroke: color,
    fill: `${color}cc`,
    width: 0,
    points: { show: false },
    paths: bars(i),
    value: (_u, v) => (v == null ? '—' : rate(v)),
  });
  const grid = { stroke: css('--line', '#d9dee4'), width: 1 };
  const ticks = { show: false };
  return {
    width,
    height,
    padding: compact ? [4, 2, 0, 2] : [10, 12, 0, 4],
    // uPlot's legend is replaced by the figure's own (see TrafficChart): its live rows read "—" away from the cursor
    legend: { show: false },
    cursor: compact ? { show: false } : { y: false, points: { show: false } },
    // uPlot takes a partial selection box (its types ask for all of it)
    select: /** @type {uPlot.Select} */ ({ show: false }),
    scales: {
      x: { time: true, range: (_u, min, max) => [min - stepMs / 2000, max + stepMs / 2000] },
      y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
    },
    axes: compact
      ? [{ show: false }, { show: false }]
      : [
          { stroke: css('--muted', '#5b6673'), grid, ticks },
          { stroke: css('--muted', '#5b6673'), grid, ticks, size: 76, values: (_u, vals) => vals.map((v) => rate(v)) },
        ],
    series: [
      { value: (_u, v) => (v == null ? '' : new Date(v * 1000).toLocaleString()) },
      series('rx (received)', css('--rx', '#2b7de9'), 1),
      series('tx (sent)', css('--tx', '#d9822b'), 2),
    ],
  };
}

/**
 * A traffic chart over `window` (WINDOWS entry). `samples`: [{rx, tx, timestamp}] in buckets of the step asked for;
 * undefined while the first answer is awaited. `compact`: the small chart of a list row (no axes, a caption).
 */
/**
 * The content width of the element `ref` holds, kept current as it resizes (undefined until it is laid out).
 * @param {{ current: HTMLElement | null }} ref
 * @param {boolean} enabled
 */
function useWidth(ref, enabled) {
  const [width, setWidth] = useState(/** @type {number | undefined} */ (undefined));
  useEffect(() => {
    const element = ref.current;
    if (!enabled || !element) return undefined;
    // the element itself, not the ref: an observer's last call may come after the chart left the page
    const measure = () => setWidth(Math.floor(element.clientWidth));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, [enabled]);
  return width;
}

/** The large chart's width: its figure's, which is the page's content column (no wider than MAX_WIDTH). */
const MAX_WIDTH = 1600;

/**
 * @param {{ samples: Sample[] | undefined, window: Window, compact?: boolean, label: string, width?: number }} props
 */
export function TrafficChart({ samples, window, compact = false, label, width }) {
  const figure = useRef(/** @type {HTMLElement | null} */ (null));
  const box = useRef(/** @type {HTMLDivElement | null} */ (null));
  const chart = useRef(/** @type {uPlot | null} */ (null));
  const stepMs = compact ? window.smallStepMs : window.stepMs;
  const b = buckets(samples, window.ms, stepMs);
  const measured = useWidth(figure, !compact && width === undefined);
  const w = width ?? (compact ? 240 : measured === undefined ? undefined : Math.max(200, Math.min(MAX_WIDTH, measured)));
  const h = compact ? 56 : 260;
  useEffect(() => {
    if (!box.current || w === undefined) return undefined;
    chart.current = new uPlot(options({ width: w, height: h, compact, stepMs }), b.data, box.current);
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
  }, [window.id, compact, w === undefined]);
  useEffect(() => {
    if (w !== undefined && chart.current && chart.current.width !== w) chart.current.setSize({ width: w, height: h });
  }, [w]);
  useEffect(() => {
    chart.current?.setData(b.data);
  }, [JSON.stringify(b.data)]);
  const words =
    samples === undefined
      ? 'loading'
      : b.totalRx + b.totalTx === 0
        ? `no traffic in the last ${window.label}`
        : `rx ${bytes(b.totalRx)}, tx ${bytes(b.totalTx)} in the last ${window.label}${compact ? '' : ` · peak ${rate(b.peak)}`}`;
  return html`<figure ref=${figure} class=${compact ? 'sparkline traffic compact' : 'traffic'} data-bytes=${b.totalRx + b.totalTx} aria-label=${`${label}: ${words}`}>
    <div ref=${box} class="plot" aria-hidden="true"></div>
    ${compact ? null : html`<div class="legend" aria-hidden="true"><span class="key rx"></span>rx (received) <span class="key tx"></span>tx (sent) <span class="sub">· bytes per second in each bar's ${window.step === 'PT1M' ? 'minute' : window.step === 'PT15M' ? '15 minutes' : 'hour'}</span></div>`}
    ${compact ? html`<div class="ends" aria-hidden="true"><span>${window.label} ago</span><span>peak ${rate(b.peak)}</span><span>now</span></div>` : null}
    <figcaption>${words}</figcaption>
  </figure>`;
}

/**
 * 1 h / 24 h / 7 d as a group of toggle buttons.
 * @param {{ value: string, onChange: (id: string) => void, label?: string }} props
 */
export function WindowPicker({ value, onChange, label = 'Window' }) {
  return html`<div class="window-picker" role="group" aria-label=${label}>
    ${WINDOWS.map((w) => html`<button type="button" key=${w.id} aria-pressed=${w.id === value ? 'true' : 'false'} onClick=${() => onChange(w.id)}>${w.label}</button>`)}
  </div>`;
}
