import test from 'ava';
import { readSettings } from '../../shared/settings.js';
import { startMetricsServer } from '../../shared/telemetry/index.js';
import { makeCall, useStack, waitFor } from '../helpers/stack.js';

/** Prometheus metrics: /metrics behind the admin token on the API, or alone on HUB_METRICS_PORT. */

const stack = useStack(test);

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A check of the text exposition format (0.0.4): HELP/TYPE comments, then `name{labels} value` lines. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  const typed = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment) {
      if (comment[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(comment[3])) throw new Error(`bad TYPE line: ${line}`);
        typed.add(comment[2]);
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)( \d+)?$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    const family = m[1].replace(/_(bucket|sum|count|total)$/, '');
    if (!typed.has(m[1]) && !typed.has(family) && !typed.has(m[1].replace(/_(bucket|sum|count)$/, ''))) throw new Error(`sample without TYPE: ${line}`);
    samples.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return samples;
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

test('/metrics needs the admin token', async (t) => {
  const none = await stack.call('GET', '/metrics');
  t.is(none.status, 401);
  const hub = await stack.hub();
  const apiKey = await hub.call('GET', '/metrics');
  t.is(apiKey.status, 403, 'an API key is not the admin token');
  t.false(apiKey.text.includes('edgehub_'));
});

test('a scrape parses and has HTTP, job, queue, pool and process metrics', async (t) => {
  const hub = await stack.hub({ name: 'metrics-hub' });
  t.is((await hub.call('GET', `${hub.h}/shares`)).status, 200);
  t.is((await hub.call('GET', `${hub.h}/shares/nope`)).status, 404);
  // a job runs (the hub CA is made by a job when a hub is created, or a health-check run)
  const env = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'x' } });
  t.is(env.status, 201);

  const scrape = async () => {
    const r = await stack.call('GET', '/metrics', { auth: stack.admin });
    t.is(r.status, 200);
    t.regex(r.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
    return parseExposition(r.text);
  };
  const samples = await waitFor(
    async () => {
      const s = await scrape();
      return find(s, 'edgehub_jobs_total').length ? s : undefined;
    },
    { what: 'a job to be counted', timeoutMs: 30_000 },
  ).catch(async () => scrape());

  // HTTP by route template (never the raw id), method and status, with latency histograms
  const list = find(samples, 'edgehub_http_requests_total', { route: '/hub/:hubId/shares', method: 'GET', status: '200' });
  t.is(list.length, 1);
  t.true(list[0].value >= 1);
  t.is(find(samples, 'edgehub_http_requests_total', { route: '/hub/:hubId/shares/:zId', status: '404' }).length, 1);
  t.false(
    samples.some((s) => s.labels.route?.includes(hub.hubId)),
    'ids never become label values',
  );
  t.true(find(samples, 'edgehub_http_request_duration_seconds_bucket', { route: '/hub/:hubId/shares', le: '+Inf' }).length === 1);
  t.true(
    samples.every((s) => s.labels.process !== undefined),
    'every series names its process',
  );

  // queue depths per queue and state, read at scrape time
  for (const state of ['waiting', 'active', 'delayed', 'failed']) t.is(find(samples, 'edgehub_queue_jobs', { queue: 'pki', state }).length, 1, state);
  // DB pool
  t.true(find(samples, 'edgehub_db_pool_connections', { state: 'max' })[0]?.value > 0);
  t.is(find(samples, 'edgehub_db_pool_connections', { state: 'in_use' }).length, 1);
  t.is(find(samples, 'edgehub_db_pool_connections', { state: 'max' })[0]?.value, 10);
  t.true(find(samples, 'edgehub_db_pool_connections', { state: 'idle' })[0]?.value >= 1, 'the prepared statements of the requests above ran on it');
  t.deepEqual(
    [...new Set(samples.filter((s) => /^edgehub_db_.*connections$/.test(s.name)).map((s) => s.name))],
    ['edgehub_db_pool_connections'],
    'one pool per process',
  );
  // process metrics
  t.true(find(samples, 'edgehub_process_resident_memory_bytes')[0]?.value > 0);
  t.true(find(samples, 'edgehub_nodejs_eventloop_lag_seconds').length === 1);
  // jobs by type and outcome, with durations (the in-process workers share this registry)
  const jobs = find(samples, 'edgehub_jobs_total');
  t.true(jobs.length > 0, 'a job was counted');
  t.truthy(jobs[0]?.labels.type);
  t.truthy(jobs[0]?.labels.outcome);
  t.true(find(samples, 'edgehub_job_duration_seconds_count').length > 0);
  // the edge metrics are defined (the edge process fills them)
  t.true(/# TYPE edgehub_edge_requests_total counter/.test((await stack.call('GET', '/metrics', { auth: stack.admin })).text));
});

test('HUB_METRICS_PORT serves the same scrape on a port of its own', async (t) => {
  const server = await startMetricsServer({ port: 0, host: '127.0.0.1' });
  t.truthy(server);
  try {
    const { port } = server!.address() as { port: number };
    const call = makeCall(`http://127.0.0.1:${port}`);
    const r = await call('GET', '/metrics', { contract: false });
    t.is(r.status, 200);
    t.true(parseExposition(r.text).length > 10);
    const other = await call('GET', '/admin/v1/hubs', { contract: false });
    t.is(other.status, 404, 'nothing but /metrics');
  } finally {
    server!.close();
  }
  t.is(await startMetricsServer(null), undefined, 'off unless set');
  t.is(readSettings({}).HUB_METRICS_PORT, undefined);
  t.deepEqual([readSettings({ HUB_METRICS_PORT: '9100' }).HUB_METRICS_PORT, readSettings({}).HUB_METRICS_HOST], [9100, '127.0.0.1']);
  t.throws(() => readSettings({ HUB_METRICS_PORT: 'ninety' }), { message: /HUB_METRICS_PORT/ });
});
