// A share's rx/tx over the last hour: a small uPlot chart, with its totals in words for everyone.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { bytes } from './format.js';
import { html } from './html.js';

const WIDTH = 180;
const HEIGHT = 44;

const line = (label, color) => ({ label, stroke: color, fill: `${color}33`, width: 1.5, points: { show: false }, paths: uPlot.paths.stepped({ align: 1 }) });

function options() {
  const style = getComputedStyle(document.documentElement);
  return {
    width: WIDTH,
    height: HEIGHT,
    legend: { show: false },
    cursor: { show: false },
    select: { show: false },
    axes: [{ show: false }, { show: false }],
    // the last hour, whatever the samples cover: a burst shows where it happened
    scales: { x: { time: true, range: () => [Date.now() / 1000 - 3600, Date.now() / 1000] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
    series: [{}, line('rx', style.getPropertyValue('--rx').trim() || '#2b7de9'), line('tx', style.getPropertyValue('--tx').trim() || '#d9822b')],
  };
}

/** `samples`: [{rx, tx, timestamp}] of one share; undefined while the first answer is awaited. */
export function Sparkline({ samples, label }) {
  const box = useRef(null);
  const chart = useRef(null);
  const points = (samples ?? []).filter((s) => s.timestamp);
  const data = [points.map((s) => Date.parse(s.timestamp) / 1000), points.map((s) => s.rx), points.map((s) => s.tx)];
  const rx = points.reduce((n, s) => n + s.rx, 0);
  const tx = points.reduce((n, s) => n + s.tx, 0);
  useEffect(() => {
    if (!box.current) return undefined;
    chart.current = new uPlot(options(), data, box.current);
    return () => chart.current?.destroy();
  }, []);
  useEffect(() => {
    chart.current?.setData(data);
  }, [JSON.stringify(data)]);
  const words = samples === undefined ? 'loading' : `rx ${bytes(rx)}, tx ${bytes(tx)} in the last hour`;
  return html`<figure class="sparkline" data-bytes=${rx + tx} aria-label=${`${label}: ${words}`}>
    <div ref=${box} aria-hidden="true"></div>
    <figcaption>${words}</figcaption>
  </figure>`;
}
