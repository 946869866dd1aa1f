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

export const presentSparklines = (hubId: string, window: MetricsWindow, lines: { scope: string; id: string; samples: UsagePoint[] }[]) => ({
  hubId,
  sparklines: lines.map((line) => ({ scope: line.scope, id: line.id, period: window.period, samples: line.samples })),
});
