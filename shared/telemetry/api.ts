/** The web process's request series: by route template, method and status. */
import client from 'prom-client';
import { LATENCY_BUCKETS, registry } from './registry.js';

const httpRequestsTotal = new client.Counter({
  name: 'edgehub_http_requests_total',
  help: 'API requests by route template, method and status',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});
const httpRequestDuration = new client.Histogram({
  name: 'edgehub_http_request_duration_seconds',
  help: 'API request latency by route template, method and status',
  labelNames: ['route', 'method', 'status'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

/**
 * prom-client's children of a label set (its `labels()` API), kept per route, method and status: a labelled inc() or
 * observe() validates and hashes the label object on every call, ~7 µs per request on the API's read path.
 */
type HttpLabels = 'route' | 'method' | 'status';
const httpSeries = new Map<string, { count: client.Counter.Internal; duration: client.Histogram.Internal<HttpLabels> }>();

/** Records one API request. `route` is the router's path template (`/hub/:hubId/shares/:zId`), never the raw path. */
export function observeHttp(route: string, method: string, status: number, seconds: number): void {
  const key = `${status} ${method} ${route}`;
  let series = httpSeries.get(key);
  if (!series) {
    const labels = [route, method, String(status)];
    series = { count: httpRequestsTotal.labels(...labels), duration: httpRequestDuration.labels(...labels) };
    httpSeries.set(key, series);
  }
  series.count.inc();
  series.duration.observe(seconds);
}
