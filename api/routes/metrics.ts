import type { Context } from 'koa';
import { config } from '../../shared/config.js';
import { badRequest } from '../../shared/errors.js';
import { querySeries, queryShareSeries } from '../../shared/metrics/query.js';
import { environmentInHub, shareInHub, sharesOfHub } from '../../shared/metrics/subjects.js';
import { windowFromQuery } from '../../shared/metrics/window.js';
import { presentSeries, presentSparklines } from '../presenters/metrics.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';

const DEFAULT_DURATION = 'PT1H';
const SPARKLINE_DURATION = 'P1D';
/** Sparklines are small: about a day in hourly points. */
const SPARKLINE_POINTS = 30;

const seriesWindow = (ctx: Context) => windowFromQuery(ctx.query, { defaultDuration: DEFAULT_DURATION });

async function hubMetrics(ctx: Context) {
  const hubId = currentHub(ctx).id;
  const window = seriesWindow(ctx);
  ctx.body = presentSeries(hubId, 'hub', hubId, window, await querySeries(hubId, 'hub', [hubId], window));
}

async function shareMetrics(ctx: Context) {
  const hubId = currentHub(ctx).id;
  const window = seriesWindow(ctx);
  const share = await shareInHub(hubId, ctx.params.shareId);
  const samples = await querySeries(hubId, 'share', [share.zId], window);
  ctx.body = presentSeries(hubId, 'share', share.zId, window, samples, { shareToken: share.zId });
}

async function environmentMetrics(ctx: Context) {
  const hubId = currentHub(ctx).id;
  const window = seriesWindow(ctx);
  const envZId = ctx.params.envZId as string;
  await environmentInHub(hubId, envZId);
  ctx.body = presentSeries(hubId, 'environment', envZId, window, await querySeries(hubId, 'environment', [envZId], window), { envZId });
}

function intParam(ctx: Context, name: string, fallback: number, max: number): number {
  const raw = ctx.query[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value)) throw badRequest(`value for query parameter '${name}' must be a non-negative integer`);
  const n = Number(value);
  if (n > max)
    throw badRequest(
      `value for query parameter '${name}' must be at most ${max}${name === 'size' ? ' (the most shares one sparklines response carries; page through the rest with page=1, 2, ...)' : ''}`,
    );
  return n;
}

/**
 * Sparklines of the hub's shares, at most HUB_SPARKLINES_MAX_SHARES (default 1,000) per response: `size` (default
 * and maximum that cap) and `page` (zero-based) page through a hub with more; the response states the cap
 * (`maxPageSize`) beside the list envelope's `pageable`, `totalElements` and `totalPages`.
 */
async function sparklines(ctx: Context) {
  const hubId = currentHub(ctx).id;
  const window = windowFromQuery(ctx.query, { defaultDuration: SPARKLINE_DURATION, targetPoints: SPARKLINE_POINTS });
  const cap = config().sparklinesMaxShares;
  const size = Math.max(1, intParam(ctx, 'size', cap, cap));
  const page = intParam(ctx, 'page', 0, 1_000_000);
  const all = await sharesOfHub(hubId);
  const shares = all.slice(page * size, (page + 1) * size);
  const series =
    shares.length === 0
      ? new Map()
      : await queryShareSeries(
          hubId,
          shares.map((s) => s.id),
          window,
          shares.length < all.length,
        );
  const lines = shares.map((s) => ({ scope: s.scope, id: s.id, samples: series.get(s.id)! }));
  ctx.body = presentSparklines(hubId, window, lines, { page, size, total: all.length, cap });
}

/**
 * Metrics and sparklines. Window: `duration` or `range` (ISO 8601 or 15m/1h/1d), optional `step`.
 * The share and environment forms without a hub in the path answer for the API key's own hub.
 */
export default function routes({ hub, account }: Routes) {
  hub.get('/metrics', hubMetrics);
  hub.get(['/metrics/sparklines', '/sparklines'], sparklines);
  hub.get('/shares/:shareId/metrics', shareMetrics);
  hub.get('/environments/:envZId/metrics', environmentMetrics);
  account.get('/hub/shares/:shareId/metrics', shareMetrics);
  account.get('/hub/environments/:envZId/metrics', environmentMetrics);
}
