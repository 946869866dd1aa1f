/** The route label: the router's path template, so ids never become label values (unbounded series). */
export function routeOf(ctx: { _matchedRoute?: string | RegExp; path: string }): string {
  if (ctx._matchedRoute !== undefined) return String(ctx._matchedRoute);
  if (ctx.path === '/admin/queues' || ctx.path.startsWith('/admin/queues/')) return '/admin/queues';
  return 'unmatched';
}
