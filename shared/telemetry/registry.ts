/** The process's Prometheus registry, the shared bucket boundaries, and the hooks run before each scrape. */
import client from 'prom-client';
import { setting } from '../settings.js';

export const registry = new client.Registry();
registry.setDefaultLabels({ process: setting('HUB_PROCESS') ?? 'app' });
client.collectDefaultMetrics({ register: registry, prefix: 'edgehub_' });

export const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
export const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Collectors that read their figures when the series are scraped (queue depths, the edge's byte tallies). */
export const scrapeHooks = new Map<string, () => Promise<void>>();

/** Runs `hook` before every scrape of this process (replacing an earlier hook of the same name). */
export function onScrape(name: string, hook: () => Promise<void> | void): void {
  scrapeHooks.set(name, async () => hook());
}
