import { edgeBytesTotal, edgeRequests, edgeUpstreamErrorsTotal, onScrape } from '../shared/telemetry.js';

/**
 * The edge's Prometheus series (shared/telemetry.ts), by frontend id ("none" for hosts no share answers). The hot
 * path only adds to plain numbers: requests in shared/telemetry's RequestTally, bytes per frontend here, moved to
 * prom-client at scrape time (prom-client hashes the labels of every single inc/observe, which cost the edge about a
 * tenth of its CPU per request).
 */
class ByteTally {
  rx = 0;
  tx = 0;
}

let bytes = new Map<string, ByteTally>();

export function observeRequest(frontend: string, status: number, seconds: number): void {
  edgeRequests.observe([frontend, String(status)], seconds);
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
