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

interface TalliedSeries {
  labels: Record<string, string>;
  /** Observations per bucket of the bounds (not cumulative); above the last bound only `count` has them. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * A request counter and its latency histogram, kept per label set in plain numbers and handed to the registry in
 * prom-client's own shapes when it is scraped, so that the exposition is that of a prom-client Counter and Histogram
 * with these names, labels and buckets. prom-client's labelled inc() and observe() check and hash the label object on
 * every call, which measured ~7 µs of CPU per request on the API's read path (A/B in one bench run) and about a tenth
 * of the edge's CPU per request; here a request costs a map look-up per label (of strings the router, the HTTP parser
 * and V8's number-string cache hand over, no key string built and hashed per request: bench:api-ab -5.2 µs against
 * one joined key) and a few additions. The API (route, method, status) and the edge (frontend, status) both count
 * their requests with it.
 */
export class RequestTally {
  /** Label values, one level of maps per label (no key string built per request), down to the series. */
  private readonly root = new Map<string, unknown>();
  /** In the order label sets first appeared, as prom-client lists them. */
  private readonly all: TalliedSeries[] = [];

  constructor(
    private readonly labelNames: readonly string[],
    /** Upper bounds in seconds, ascending; +Inf is implied. */
    readonly bounds: readonly number[],
  ) {}

  /** One request: `values` in the order of the label names. */
  observe(values: readonly string[], seconds: number): void {
    let level = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]) as Map<string, unknown> | undefined;
      if (!next) level.set(values[i], (next = new Map()));
      level = next;
    }
    let series = level.get(values[last]) as TalliedSeries | undefined;
    if (!series) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i]));
      series = { labels, buckets: new Float64Array(this.bounds.length), sum: 0, count: 0 };
      level.set(values[last], series);
      this.all.push(series);
    }
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]) i++;
    if (i < bounds.length) series.buckets[i]++;
    series.sum += seconds;
    series.count++;
  }

  reset(): void {
    this.root.clear();
    this.all.length = 0;
  }

  /** The counter of requests, as a metric the registry takes. */
  counter(name: string, help: string): client.Metric {
    const values = () => this.all.map((s) => ({ value: s.count, labels: s.labels }));
    const get = async () => ({ help, name, type: 'counter', values: values(), aggregator: 'sum' });
    return { name, help, type: 'counter', aggregator: 'sum', get, reset: () => this.reset() } as unknown as client.Metric;
  }

  /** The latency histogram, as a metric the registry takes. */
  histogram(name: string, help: string): client.Metric {
    // prom-client's histogram shape: `le` as the value's labels and the series' labels as shared labels
    const forPromString = () =>
      this.all.flatMap((s) => {
        let cumulative = 0;
        const buckets = this.bounds.map((le, i) => {
          cumulative += s.buckets[i];
          return { labels: { le } as Record<string, string | number>, sharedLabels: s.labels, value: cumulative, metricName: `${name}_bucket`, exemplar: null as null | undefined };
        });
        return [
          ...buckets,
          { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${name}_bucket`, exemplar: null },
          { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${name}_sum`, exemplar: undefined },
          { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${name}_count`, exemplar: undefined },
        ];
      });
    const getForPromString = async () => ({ name, help, type: 'histogram', values: forPromString(), aggregator: 'sum' });
    // get() (JSON) as prom-client gives it: shared labels folded into each value's labels
    const get = async () => ({
      name,
      help,
      type: 'histogram',
      values: forPromString().map(({ labels, sharedLabels, value, metricName, exemplar }) => ({ value, metricName, exemplar, labels: { ...labels, ...sharedLabels } })),
      aggregator: 'sum',
    });
    return { name, help, type: 'histogram', aggregator: 'sum', get, getForPromString, reset: () => this.reset() } as unknown as client.Metric;
  }
}

// ---- HTTP API (web) ----

const httpRequests = new RequestTally(['route', 'method', 'status'], LATENCY_BUCKETS);
registry.registerMetric(httpRequests.counter('edgehub_http_requests_total', 'API requests by route template, method and status'));
registry.registerMetric(httpRequests.histogram('edgehub_http_request_duration_seconds', 'API request latency by route template, method and status'));

/** Records one API request. `route` is the router's path template (`/hub/:hubId/shares/:zId`), never the raw path. */
export function observeHttp(route: string, method: string, status: number, seconds: number): void {
  httpRequests.observe([route, method, String(status)], seconds);
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
export const edgeRequests = new RequestTally(['frontend', 'status'], LATENCY_BUCKETS);
registry.registerMetric(edgeRequests.counter('edgehub_edge_requests_total', 'Requests the edge answered, by frontend and status'));
registry.registerMetric(
  edgeRequests.histogram('edgehub_edge_request_duration_seconds', 'Edge request duration until the response ended, by frontend and status'),
);

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
