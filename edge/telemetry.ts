import {
  edgePolicyRefusalsTotal,
  edgeBytesTotal,
  edgeRequestDuration,
  edgeRequestsTotal,
  edgeUpstreamErrorsTotal,
  onScrape,
} from '../shared/telemetry/index.js';

/**
 * The edge's Prometheus series (shared/telemetry/), by frontend id ("none" for hosts no share answers). Request
 * durations go into prom-client's Histogram as they end, with one label object per frontend and status (made once,
 * not per request). What is counted for every request or every chunk carried, requests and bytes, adds to plain
 * numbers here and moves into prom-client's counters when the series are scraped: a labelled `inc()` hashes and
 * checks its labels on each call, about a microsecond per request.
 */
class ByteTally {
  rx = 0;
  tx = 0;
}

interface RequestTally {
  labels: { frontend: string; status: string };
  count: number;
}

let bytes = new Map<string, ByteTally>();
const requests = new Map<string, Map<number, RequestTally>>();

export function observeRequest(frontend: string, status: number, seconds: number): void {
  let byStatus = requests.get(frontend);
  if (!byStatus) {
    byStatus = new Map();
    requests.set(frontend, byStatus);
  }
  let tally = byStatus.get(status);
  if (!tally) {
    tally = { labels: { frontend, status: String(status) }, count: 0 };
    byStatus.set(status, tally);
  }
  tally.count++;
  edgeRequestDuration.observe(tally.labels, seconds);
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

/** A refusal of a share's traffic policy (edge/policy), by share and reason. */
export function observePolicyRefusal(share: string, reason: string): void {
  edgePolicyRefusalsTotal.inc({ share, reason });
}

export function observeUpstreamError(frontend: string, kind: string): void {
  edgeUpstreamErrorsTotal.inc({ frontend, kind });
}

/** Moves the requests and bytes tallied since the last scrape into the exposed counters. */
function reportTallies(): void {
  for (const byStatus of requests.values()) {
    for (const tally of byStatus.values()) {
      if (!tally.count) continue;
      edgeRequestsTotal.inc(tally.labels, tally.count);
      tally.count = 0;
    }
  }
  const done = bytes;
  bytes = new Map();
  for (const [frontend, tally] of done) {
    if (tally.rx) edgeBytesTotal.inc({ frontend, direction: 'rx' }, tally.rx);
    if (tally.tx) edgeBytesTotal.inc({ frontend, direction: 'tx' }, tally.tx);
  }
}

onScrape('edge', reportTallies);
