/**
 * Prometheus metrics (prom-client). One registry per process; every process (web, worker, clock, edge) exposes
 * its own series:
 *
 * - the web process answers `GET /metrics` on the API port, behind the admin token (api/metrics.ts);
 * - any process started with `HUB_METRICS_PORT` also serves them on that port alone (`GET /metrics`, no auth: bind
 *   it to a private interface, `HUB_METRICS_HOST`, default 127.0.0.1). `npm start` gives each child its own port
 *   from that base (see README).
 *
 * Every series carries the label `process` (HUB_PROCESS). Queue depths are collected by whichever process calls
 * `collectQueueDepths` (the web process), the same figures from any of them.
 */
import { createServer, type Server } from 'node:http';
import client from 'prom-client';
import { db, statementPoolStats } from './db.js';
import { logger } from './logger.js';

export const registry = new client.Registry();
registry.setDefaultLabels({ process: process.env.HUB_PROCESS ?? 'app' });
client.collectDefaultMetrics({ register: registry, prefix: 'edgehub_' });

const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

// ---- requests tallied in plain numbers (the API and the edge) ----


// ---- HTTP API (web) ----

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

// ---- jobs (worker) ----

export type JobOutcome = 'succeeded' | 'failed' | 'skipped' | 'stalled';

export const jobsTotal = new client.Counter({
  name: 'edgehub_jobs_total',
  help: 'Job runs by type and outcome (failed includes a run whose retry is still to come)',
  labelNames: ['type', 'outcome'] as const,
  registers: [registry],
});

export const jobDuration = new client.Histogram({
  name: 'edgehub_job_duration_seconds',
  help: 'Job run duration by type and outcome',
  labelNames: ['type', 'outcome'] as const,
  buckets: JOB_BUCKETS,
  registers: [registry],
});

/** Runs one job attempt and records its outcome and duration. A result `{skipped}` counts as skipped. */
export async function observeJob<T>(type: string, run: () => Promise<T>): Promise<T> {
  const end = jobDuration.startTimer({ type });
  try {
    const result = await run();
    const outcome: JobOutcome = result && typeof result === 'object' && 'skipped' in result ? 'skipped' : 'succeeded';
    jobsTotal.inc({ type, outcome });
    end({ outcome });
    return result;
  } catch (err) {
    jobsTotal.inc({ type, outcome: 'failed' });
    end({ outcome: 'failed' });
    throw err;
  }
}

// ---- queues ----

export const queueJobs = new client.Gauge({
  name: 'edgehub_queue_jobs',
  help: 'Jobs per queue and state (waiting, active, delayed, failed), read from Redis at scrape time',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
type CountingQueue = { name: string; getJobCounts(...states: string[]): Promise<Record<string, number>> };

/** Runs `hook` before every scrape of this process (replacing an earlier hook of the same name). */
export function onScrape(name: string, hook: () => Promise<void> | void): void {
  scrapeHooks.set(name, async () => hook());
}

/** Makes each scrape read the depth of these queues (a function, so queues are created lazily). */
export function collectQueueDepths(queues: () => CountingQueue[]): void {
  scrapeHooks.set('queues', async () => {
    queueJobs.reset();
    await Promise.all(
      queues().map(async (q) => {
        const counts = await q.getJobCounts(...QUEUE_STATES);
        for (const state of QUEUE_STATES) queueJobs.set({ queue: q.name, state }, counts[state] ?? 0);
      }),
    );
  });
}

// ---- database pool ----

interface PoolGaugeStats {
  inUse: number;
  idle: number;
  max: number;
  waiting: number;
}

/** A gauge of a connection pool's connections by state, read at scrape time (nothing while the pool does not exist). */
function poolGauge(name: string, help: string, stats: () => PoolGaugeStats | undefined): void {
  new client.Gauge({
    name,
    help,
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const pool = stats();
      if (!pool) return;
      this.set({ state: 'in_use' }, pool.inUse);
      this.set({ state: 'idle' }, pool.idle);
      this.set({ state: 'max' }, pool.max);
      this.set({ state: 'waiting' }, pool.waiting);
    },
  });
}

poolGauge('edgehub_db_pool_connections', 'Sequelize pool connections by state: in use, idle, the maximum, and callers waiting for one', () => {
  let pool: { available: number; using: number; waiting: number; maxSize: number } | undefined;
  try {
    pool = (db().connectionManager as unknown as { pool?: typeof pool }).pool;
  } catch {
    return undefined; // not connected in this process (yet)
  }
  return pool && { inUse: pool.using, idle: pool.available, max: pool.maxSize, waiting: pool.waiting };
});

poolGauge(
  'edgehub_db_statement_pool_connections',
  "Connections of the pool the hot paths' prepared statements run on, by state: in use, idle, the maximum, and callers waiting for one",
  () => {
    const pool = statementPoolStats();
    return pool && { inUse: pool.total - pool.idle, idle: pool.idle, max: pool.max, waiting: pool.waiting };
  },
);

// ---- edge (data plane) ----

/** The edge's requests by frontend and status (fed by edge/telemetry.ts). */
export const edgeRequestsTotal = new client.Counter({
  name: 'edgehub_edge_requests_total',
  help: 'Requests the edge answered, by frontend and status',
  labelNames: ['frontend', 'status'] as const,
  registers: [registry],
});
export const edgeRequestDuration = new client.Histogram({
  name: 'edgehub_edge_request_duration_seconds',
  help: 'Edge request duration until the response ended, by frontend and status',
  labelNames: ['frontend', 'status'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const edgeBytesTotal = new client.Counter({
  name: 'edgehub_edge_bytes_total',
  help: 'Bytes the edge carried, by frontend and direction (rx from clients, tx to clients)',
  labelNames: ['frontend', 'direction'] as const,
  registers: [registry],
});

export const edgeUpstreamErrorsTotal = new client.Counter({
  name: 'edgehub_edge_upstream_errors_total',
  help: 'Failures reaching share targets, by frontend and kind (refused, reset, timeout, denied, tls, ...)',
  labelNames: ['frontend', 'kind'] as const,
  registers: [registry],
});

// ---- exposition ----

const scrapeHooks = new Map<string, () => Promise<void>>();

/** The Prometheus text exposition of this process (runs the scrape-time collectors first). */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  registry.setDefaultLabels({ process: process.env.HUB_PROCESS ?? 'app' }); // set by the process's main after imports
  const results = await Promise.allSettled([...scrapeHooks.values()].map((hook) => hook()));
  for (const r of results) if (r.status === 'rejected') logger.warn({ err: String(r.reason) }, 'a metrics collector failed');
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/**
 * With `HUB_METRICS_PORT` set, serves `GET /metrics` on that port (host `HUB_METRICS_HOST`, default 127.0.0.1)
 * with no authentication: the separate port is the protection, so keep it off public interfaces.
 * Returns the server, or undefined when the variable is unset.
 */
export async function startMetricsServer(env: NodeJS.ProcessEnv = process.env): Promise<Server | undefined> {
  const raw = env.HUB_METRICS_PORT?.trim();
  if (!raw) return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`HUB_METRICS_PORT: must be a port number (got '${raw}')`);
  const host = env.HUB_METRICS_HOST?.trim() || '127.0.0.1';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not_found', message: 'only GET /metrics is served here' }));
      return;
    }
    metricsText().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (err) => {
        logger.error({ err: String(err) }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'internal_error', message: 'metrics scrape failed' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  server.unref();
  logger.info({ host, port: (server.address() as { port: number }).port }, 'metrics listening');
  return server;
}
