/** The text exposition: on the API's /metrics (api/routes/telemetry.ts) and on HUB_METRICS_PORT. */
import { createServer, type Server } from 'node:http';
import { logger } from '../logger.js';
import { registry, scrapeHooks } from './registry.js';
import { setting } from '../settings.js';
import { config } from '../config.js';

/** The Prometheus text exposition of this process (runs the scrape-time collectors first). */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  registry.setDefaultLabels({ process: setting('HUB_PROCESS') ?? 'app' }); // set by the process's main after imports
  const results = await Promise.allSettled([...scrapeHooks.values()].map((hook) => hook()));
  for (const r of results) if (r.status === 'rejected') logger.warn({ err: String(r.reason) }, 'a metrics collector failed');
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/**
 * With `HUB_METRICS_PORT` set, serves `GET /metrics` on that port (host `HUB_METRICS_HOST`, default 127.0.0.1)
 * with no authentication: the separate port is the protection, so keep it off public interfaces.
 * Returns the server, or undefined when there is no listener to start (`null`).
 */
export async function startMetricsServer(listener: { port: number; host: string } | null = config().metricsListener ?? null): Promise<Server | undefined> {
  if (!listener) return undefined;
  const { port, host } = listener;
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
