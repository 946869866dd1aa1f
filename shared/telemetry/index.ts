/**
 * Prometheus metrics (prom-client). One registry per process; every process (web, worker, clock, edge) exposes
 * its own series:
 *
 * - the web process answers `GET /metrics` on the API port, behind the admin token (api/routes/telemetry.ts);
 * - any process started with `HUB_METRICS_PORT` also serves them on that port alone (`GET /metrics`, no auth: bind
 *   it to a private interface, `HUB_METRICS_HOST`, default 127.0.0.1). `npm start` gives each child its own port
 *   from that base (see docs/operating.md).
 *
 * Every series carries the label `process` (HUB_PROCESS). Queue depths are collected by whichever process calls
 * `collectQueueDepths` (the web process), the same figures from any of them.
 */
export * from './api.js';
export * from './edge.js';
export * from './exposition.js';
export * from './jobs.js';
export * from './pools.js';
export * from './queues.js';
export { onScrape, registry } from './registry.js';
