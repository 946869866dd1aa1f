import { edgeBytesTotal, edgeRequestDuration, edgeRequestsTotal, edgeUpstreamErrorsTotal, onScrape } from '../shared/telemetry/index.js';

/**
 * The edge's Prometheus series (shared/telemetry/), by frontend id ("none" for hosts no share answers): requests
 * through prom-client's Counter and Histogram; bytes, which are counted for every chunk carried, add to plain numbers
 * per frontend here and move into the counter when the series are scraped.
 */
class ByteTally {
  rx = 0;
  tx = 0;
}

let bytes = new Map<string, ByteTally>();

export function observeRequest(frontend: string, status: number, seconds: number): void {
  const labels = { frontend, status: String(status) };
  edgeRequestsTotal.inc(labels);
  edgeRequestDuration.observe(labels, seconds);
}

export function observeBytes(frontend: string, rx: number, tx: number): void {
  let tally = bytes.get(frontend);
  if (!tally) {
    tally = new ByteTally();
    bytes.set(frontend, tally);
  }
  tally.rx += rx;
  tally.tx += tx;
}

export function observeUpstreamError(frontend: string, kind: string): void {
  edgeUpstreamErrorsTotal.inc({ frontend, kind });
}

/** Moves the bytes tallied since the last scrape into the exposed counter. */
export function reportTallies(): void {
  const done = bytes;
  bytes = new Map();
  for (const [frontend, tally] of done) {
    if (tally.rx) edgeBytesTotal.inc({ frontend, direction: 'rx' }, tally.rx);
    if (tally.tx) edgeBytesTotal.inc({ frontend, direction: 'tx' }, tally.tx);
  }
}

onScrape('edge', reportTallies);
