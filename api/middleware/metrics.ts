import type { Middleware } from 'koa';
import { observeHttp } from '../../shared/telemetry.js';

/** The route label: the router's path template, so ids never become label values (unbounded series). */
export function routeOf(ctx: { _matchedRoute?: string | RegExp; path: string }): string {
  if (ctx._matchedRoute !== undefined) return String(ctx._matchedRoute);
  if (ctx.path === '/admin/queues' || ctx.path.startsWith('/admin/queues/')) return '/admin/queues';
  return 'unmatched';
}

/** Counts every API request and its latency by route template, method and status (shared/telemetry.ts). */
export const httpMetrics: Middleware = async (ctx, next) => {
  const started = performance.now();
  let status = 500;
  try {
    await next();
    status = ctx.status;
  } finally {
    observeHttp(routeOf(ctx as never), ctx.method, status, (performance.now() - started) / 1000);
  }
};
