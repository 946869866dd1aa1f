import type { Context, Next } from 'koa';
import { badRequest, refusal } from '../../shared/errors.js';
import { DURATION } from '../../shared/durations.js';
import { querySeries } from '../../shared/metrics/query.js';
import { ipsecShareInHub, ipsecTunnelShareIds } from '../../shared/metrics/subjects.js';
import { planWindow, windowFromQuery } from '../../shared/metrics/window.js';
import { presentSeries } from '../presenters/metrics.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';

/** The tunnel metrics windows (30m, 1h, 1d, 7d) and the bucket step each is shown in. */
const TUNNEL_WINDOWS: Record<string, { durationMs: number; stepMs: number }> = {
  '30m': { durationMs: 30 * DURATION.MINUTE, stepMs: DURATION.MINUTE },
  '1h': { durationMs: DURATION.HOUR, stepMs: DURATION.MINUTE },
  '1d': { durationMs: DURATION.DAY, stepMs: 15 * DURATION.MINUTE },
  '7d': { durationMs: 7 * DURATION.DAY, stepMs: DURATION.HOUR },
};

const requireIpsec = async (ctx: Context, next: Next) => {
  if (!currentHub(ctx).features?.ipsec) throw refusal('EH_FEATURE_DISABLED', 'IPsec is not enabled for this hub');
  await next();
};

function tunnelWindow(ctx: Context) {
  const raw = ctx.query.window;
  const name = Array.isArray(raw) ? raw[0] : (raw ?? '1h');
  const choice = Object.hasOwn(TUNNEL_WINDOWS, name) ? TUNNEL_WINDOWS[name] : undefined;
  if (!choice) throw badRequest(`value for query parameter 'window' must be one of 30m, 1h, 1d, 7d (received '${name}')`);
  return planWindow(choice);
}

/** IPsec tunnel metrics (the sum of its IPsec shares) and IPsec share metrics; only for hubs with IPsec enabled. */
export default function routes({ hub }: Routes) {
  hub.get('/ipsec-tunnels/:id/metrics', requireIpsec, async (ctx) => {
    const hubId = currentHub(ctx).id;
    const window = tunnelWindow(ctx);
    const shareIds = await ipsecTunnelShareIds(hubId, ctx.params.id);
    ctx.body = presentSeries(hubId, 'ipsecTunnel', ctx.params.id, window, await querySeries(hubId, 'share', shareIds, window));
  });
  hub.get('/ipsec-shares/:id/metrics', requireIpsec, async (ctx) => {
    const hubId = currentHub(ctx).id;
    const window = windowFromQuery(ctx.query, { defaultDuration: 'PT1H' });
    await ipsecShareInHub(hubId, ctx.params.id);
    ctx.body = presentSeries(hubId, 'ipsecShare', ctx.params.id, window, await querySeries(hubId, 'share', [ctx.params.id], window));
  });
}
