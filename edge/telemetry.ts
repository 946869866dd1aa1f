import { edgeBytesTotal, edgeRequestDuration, edgeRequestsTotal, edgeUpstreamErrorsTotal } from '../shared/telemetry.js';

/**
 * The edge's Prometheus series (shared/telemetry.ts), by frontend id ("none" for hosts no share answers). Labelled
 * children are looked up once and kept, so the hot path does no label hashing per request.
 */
type Child<T> = T extends { labels(...args: never[]): infer C } ? C : never;
const requestChildren = new Map<string, { count: Child<typeof edgeRequestsTotal>; duration: Child<typeof edgeRequestDuration> }>();
const byteChildren = new Map<string, { rx: Child<typeof edgeBytesTotal>; tx: Child<typeof edgeBytesTotal> }>();

export function observeRequest(frontend: string, status: number, seconds: number): void {
  const key = `${frontend}|${status}`;
  let c = requestChildren.get(key);
  if (!c) {
    const labels = { frontend, status: String(status) };
    c = { count: edgeRequestsTotal.labels(labels), duration: edgeRequestDuration.labels(labels) };
    requestChildren.set(key, c);
  }
  c.count.inc();
  c.duration.observe(seconds);
}

export function observeBytes(frontend: string, rx: number, tx: number): void {
  let c = byteChildren.get(frontend);
  if (!c) {
    c = { rx: edgeBytesTotal.labels({ frontend, direction: 'rx' }), tx: edgeBytesTotal.labels({ frontend, direction: 'tx' }) };
    byteChildren.set(frontend, c);
  }
  if (rx) c.rx.inc(rx);
  if (tx) c.tx.inc(tx);
}

export function observeUpstreamError(frontend: string, kind: string): void {
  edgeUpstreamErrorsTotal.inc({ frontend, kind });
}
