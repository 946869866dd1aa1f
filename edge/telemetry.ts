import { edgeBytesTotal, edgeRequestDuration, edgeRequestsTotal, edgeUpstreamErrorsTotal, onScrape } from '../shared/telemetry.js';

/**
 * The edge's Prometheus series (shared/telemetry.ts), by frontend id ("none" for hosts no share answers). The hot
 * path only adds to plain numbers kept per frontend and status; they reach prom-client at scrape time (prom-client
 * hashes the labels of every single inc/observe, which cost the edge about a tenth of its CPU per request).
 */
const BOUNDS = edgeRequestDuration.bounds;

class RequestTally {
  count = 0;
  sum = 0;
  readonly buckets = new Float64Array(BOUNDS.length + 1);
}

class ByteTally {
  rx = 0;
  tx = 0;
}

let requests = new Map<string, Map<number, RequestTally>>();
let bytes = new Map<string, ByteTally>();

export function observeRequest(frontend: string, status: number, seconds: number): void {
  let byStatus = requests.get(frontend);
  if (!byStatus) {
    byStatus = new Map();
    requests.set(frontend, byStatus);
  }
  let tally = byStatus.get(status);
  if (!tally) {
    tally = new RequestTally();
    byStatus.set(status, tally);
  }
  tally.count++;
  tally.sum += seconds;
  let i = 0;
  while (i < BOUNDS.length && seconds > BOUNDS[i]) i++;
  tally.buckets[i]++;
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

/** Moves what was tallied since the last scrape into the exposed series. */
export function reportTallies(): void {
  const doneRequests = requests;
  const doneBytes = bytes;
  requests = new Map();
  bytes = new Map();
  for (const [frontend, byStatus] of doneRequests) {
    for (const [status, tally] of byStatus) {
      const labels = { frontend, status: String(status) };
      edgeRequestsTotal.inc(labels, tally.count);
      edgeRequestDuration.add(labels, tally.buckets, tally.sum, tally.count);
    }
  }
  for (const [frontend, tally] of doneBytes) {
    if (tally.rx) edgeBytesTotal.inc({ frontend, direction: 'rx' }, tally.rx);
    if (tally.tx) edgeBytesTotal.inc({ frontend, direction: 'tx' }, tally.tx);
  }
}

onScrape('edge', reportTallies);
