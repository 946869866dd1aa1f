import type { UsagePoint } from '../../shared/metrics/query.js';
import type { MetricsWindow } from '../../shared/metrics/window.js';

/** SPEC.md's metric series: hubId, scope, id, period, samples; share metrics add shareToken, environment metrics envZId. */
export const presentSeries = (
  hubId: string,
  scope: string,
  id: string,
  window: MetricsWindow,
  samples: UsagePoint[],
  extra: { shareToken?: string; envZId?: string } = {},
) => ({ hubId, scope, id, ...extra, period: window.period, samples });

/** SPEC.md's sparkline response, plus the page it is (list envelope fields) and the cap on shares per response. */
export const presentSparklines = (
  hubId: string,
  window: MetricsWindow,
  lines: { scope: string; id: string; samples: UsagePoint[] }[],
  paging: { page: number; size: number; total: number; cap: number },
) => ({
  hubId,
  sparklines: lines.map((line) => ({ scope: line.scope, id: line.id, period: window.period, samples: line.samples })),
  pageable: { pageNumber: paging.page, pageSize: paging.size },
  totalElements: paging.total,
  totalPages: Math.ceil(paging.total / paging.size),
  maxPageSize: paging.cap,
});

/**
 * The same response as presentSparklines, as JSON text written directly: a day of hourly points for 1,000 shares is
 * 24,000 points, and building the text from the numbers (timestamps formatted once per bucket, not per point) costs a
 * fraction of JSON.stringify over as many objects. test/metrics-shares.test.ts and bench/sparklines.ts compare it
 * with the object form.
 */
export function sparklinesJson(
  hubId: string,
  window: MetricsWindow,
  lines: { scope: string; id: string; samples: UsagePoint[] }[],
  paging: { page: number; size: number; total: number; cap: number },
): string {
  const { hubId: _hub, sparklines: _lines, ...envelope } = presentSparklines(hubId, window, [], paging);
  const period = JSON.stringify(window.period);
  const stamps = new Map<string, string>();
  const stamp = (t: string) => {
    let s = stamps.get(t);
    if (s === undefined) stamps.set(t, (s = `,"timestamp":${JSON.stringify(t)}}`));
    return s;
  };
  const parts: string[] = [];
  for (const line of lines) {
    let text = `{"scope":${JSON.stringify(line.scope)},"id":${JSON.stringify(line.id)},"period":${period},"samples":[`;
    for (let i = 0; i < line.samples.length; i++) {
      const p = line.samples[i];
      text += `${i ? ',' : ''}{"rx":${p.rx},"tx":${p.tx}${stamp(p.timestamp)}`;
    }
    parts.push(text + ']}');
  }
  // the fields after `sparklines`, in presentSparklines' order, without their opening brace
  return `{"hubId":${JSON.stringify(hubId)},"sparklines":[${parts.join(',')}],${JSON.stringify(envelope).slice(1)}`;
}
