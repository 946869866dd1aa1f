import type { UsagePoint } from '../../shared/metrics/query.js';
import type { MetricsWindow } from '../../shared/metrics/window.js';

/** A metric series: hubId, scope, id, period, samples; share metrics add shareToken, environment metrics envZId. */
export const presentSeries = (
  hubId: string,
  scope: string,
  id: string,
  window: MetricsWindow,
  samples: UsagePoint[],
  extra: { shareToken?: string; envZId?: string } = {},
) => ({ hubId, scope, id, ...extra, period: window.period, samples });

/** The sparkline response, plus the page it is (list envelope fields) and the cap on shares per response. */
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
