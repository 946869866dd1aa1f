/**
 * Request inspection and replay through a real edge: what is recorded (redacted credentials, bodies cut at
 * HUB_INSPECT_BODY_BYTES, bytes that are not UTF-8 kept exactly), the bounds per share and the separation of hubs,
 * the live stream, replays through the edge's own pools, and the refusals.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Redis } from 'ioredis';
import test from 'ava';
import { Capture } from '../../edge/inspect/capture.js';
import { recordedExchange } from '../../shared/inspect/record.js';
import { inspectKeys } from '../../shared/inspect/store.js';
import { registry } from '../../shared/telemetry/index.js';
import { edgeRequest, readBody, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const BODY_BYTES = 1024;
const MAX = 5;
const stack = useStack(test, { env: { HUB_INSPECT_BODY_BYTES: String(BODY_BYTES), HUB_INSPECT_MAX: String(MAX), HUB_EDGE_FLUSH_MS: '600000' } });
/** What the backend received, by the x-n header the tests set. */
const seen: { url: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = [];
const backend = useBackend(test, stack, async (req, res) => {
  const body = await readBody(req);
  seen.push({ url: req.url!, headers: req.headers, body });
  if (req.url === '/binary') {
    res.setHeader('content-type', 'application/octet-stream');
    return res.end(body);
  }
  res.setHeader('set-cookie', 'session=s3cret; Path=/');
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ url: req.url, length: body.length }));
});
const edge = useTestEdge(test, stack);
let hub: HubFixture;
let other: HubFixture;

test.before(async () => {
  [hub, other] = await Promise.all([stack.hub(), stack.hub()]);
});

const requests = (h: HubFixture, zId: string) => h.call('GET', `${h.h}/shares/${zId}/requests`);
/** Waits until the share's list holds `n` exchanges (the capture writes asynchronously). */
/** A route of an inspected share, for exchanges handed to a Capture directly. */
const inspectedRoute = (hubId: string, zId: string, target: string) =>
  ({
    zId,
    hubId,
    envZId: 'e',
    frontendId: 'f',
    target: new URL(target),
    mutualTls: false,
    auth: null,
    emailDomains: null,
    checkIntervalMs: 0,
    inspect: true,
    reach: 'edge',
  }) as const;

const listed = (h: HubFixture, zId: string, n: number) =>
  waitFor(
    async () => {
      const r = await requests(h, zId);
      return r.status === 200 && r.json.length >= n && r.json;
    },
    { what: `${n} exchanges listed` },
  );

test.serial('inspect is set on create and by PATCH; unknown fields are refused by name; another hub gets 404', async (t) => {
  const { zId, json } = await routedShare(edge, hub, { target: backend.url });
  t.false(json.inspect);
  const on = await hub.call('PATCH', `${hub.h}/shares/${zId}`, { body: { inspect: true } });
  t.is(on.status, 200);
  t.true(on.json.inspect);
  const typo = await hub.call('PATCH', `${hub.h}/shares/${zId}`, { body: { inpsect: true, mtls: true } });
  t.is(typo.status, 400);
  t.regex(typo.json.message, /'\$\.inpsect'/);
  t.regex(typo.json.message, /'\$\.mtls'/);
  t.is((await hub.call('PATCH', `${hub.h}/shares/${zId}`, { body: { inspect: 'yes' } })).status, 400);
  t.is((await hub.call('PATCH', `${hub.h}/shares/${zId}`, { body: { oauthEmailDomains: ['example.com'] } })).status, 400, 'login options need a provider');
  t.is((await other.call('PATCH', `${other.h}/shares/${zId}`, { body: { inspect: false } })).status, 404);
  t.true((await hub.call('GET', `${hub.h}/shares/${zId}`)).json.inspect, 'nothing half-written');
  // mutual TLS from PATCH: the address moves to the TLS listener
  const mtls = await hub.call('PATCH', `${hub.h}/shares/${zId}`, { body: { mutualTls: true } });
  t.true(mtls.json.mutualTls);
  t.regex(mtls.json.frontendEndpoint, /^https:/);
  const created = await routedShare(edge, hub, { target: backend.url, inspect: true });
  t.true(created.json.inspect);
});

test.serial('a share without inspect records nothing; with it, an exchange is recorded with credentials redacted', async (t) => {
  const plain = await routedShare(edge, hub, { target: backend.url });
  t.is((await edgeRequest(edge.httpPort!, plain.host, { path: '/quiet' })).status, 200);
  await edge.inspection!.capture.flushed();
  t.deepEqual((await requests(hub, plain.zId)).json, []);

  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const r = await edgeRequest(edge.httpPort!, host, {
    method: 'POST',
    path: '/orders?id=7',
    headers: {
      authorization: 'Bearer top-secret',
      cookie: 'sid=abc',
      'proxy-authorization': 'Basic eA==',
      'x-ssl-client-cert': 'MIIB...',
      'content-type': 'application/json',
      'x-visible': 'kept',
    },
    body: '{"item":"tea"}',
  });
  t.is(r.status, 200);
  const [summary] = await listed(hub, zId, 1);
  t.is(summary.method, 'POST');
  t.is(summary.path, '/orders?id=7');
  t.is(summary.status, 200);
  t.is(summary.clientAddress, '127.0.0.1');
  t.is(summary.edge, edge.inspection!.capture.edge);
  t.true(summary.rxBytes > 14 && summary.txBytes > r.body.length, JSON.stringify(summary));
  t.true(Math.abs(Date.parse(summary.at) - Date.now()) < 60_000);
  const detail = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${summary.id}`);
  t.is(detail.status, 200);
  const header = (pairs: [string, string][], name: string) => pairs.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
  t.deepEqual(header(detail.json.request.headers, 'authorization'), ['[redacted]']);
  t.deepEqual(header(detail.json.request.headers, 'cookie'), ['[redacted]']);
  t.deepEqual(header(detail.json.request.headers, 'x-ssl-client-cert'), ['[redacted]']);
  t.deepEqual(header(detail.json.request.headers, 'x-visible'), ['kept']);
  t.deepEqual(header(detail.json.response.headers, 'set-cookie'), ['[redacted]']);
  t.false(
    JSON.stringify(detail.json).includes('top-secret') || JSON.stringify(detail.json).includes('s3cret') || JSON.stringify(detail.json).includes('sid=abc'),
  );
  t.is(Buffer.from(detail.json.request.body, 'base64').toString(), '{"item":"tea"}');
  t.deepEqual(JSON.parse(Buffer.from(detail.json.response.body, 'base64').toString()), { url: '/orders?id=7', length: 14 });
  t.false(detail.json.request.bodyTruncated);
  // and nothing of it under another hub's key
  t.is((await other.call('GET', `${other.h}/shares/${zId}/requests`)).status, 404);
  t.is((await other.call('GET', `${other.h}/shares/${zId}/requests/${summary.id}`)).status, 404);
  t.is((await other.call('POST', `${other.h}/shares/${zId}/requests/${summary.id}/replay`)).status, 404);
  t.is((await other.call('GET', `${other.h}/shares/${zId}/requests/live`, { contract: false })).status, 404);
  t.is((await hub.call('GET', `${hub.h}/shares/${zId}/requests/0-1`)).status, 404);
  t.is((await hub.call('GET', `${hub.h}/shares/${zId}/requests/not-an-id`)).status, 404);
});

test.serial('bodies are cut at HUB_INSPECT_BODY_BYTES but pass whole; bytes that are not UTF-8 are kept exactly', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const big = randomBytes(BODY_BYTES * 5);
  const r = await edgeRequest(edge.httpPort!, host, { method: 'POST', path: '/binary', body: big, headers: { 'content-type': 'application/octet-stream' } });
  t.true(r.body.equals(big), 'the target and the client get every byte');
  t.true(seen.at(-1)!.body.equals(big));
  const small = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80, 0x41]); // invalid UTF-8 sequences
  t.true((await edgeRequest(edge.httpPort!, host, { method: 'POST', path: '/binary', body: small })).body.equals(small));
  const [latest, first] = await listed(hub, zId, 2);
  const cut = (await hub.call('GET', `${hub.h}/shares/${zId}/requests/${first.id}`)).json;
  t.true(cut.request.bodyTruncated);
  t.true(cut.response.bodyTruncated);
  t.true(Buffer.from(cut.request.body, 'base64').equals(big.subarray(0, BODY_BYTES)));
  t.true(Buffer.from(cut.response.body, 'base64').equals(big.subarray(0, BODY_BYTES)));
  t.true(first.rxBytes > big.length && first.txBytes > big.length, 'every byte counted');
  const exact = (await hub.call('GET', `${hub.h}/shares/${zId}/requests/${latest.id}`)).json;
  t.true(Buffer.from(exact.request.body, 'base64').equals(small));
  t.true(Buffer.from(exact.response.body, 'base64').equals(small));
  // a request whose body was cut cannot be sent again whole
  const refused = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${first.id}/replay`);
  t.is(refused.status, 400);
  t.regex(refused.json.message, /HUB_INSPECT_BODY_BYTES/);
});

test.serial("a hub over its limit loses its own oldest exchanges, never another hub's", async (t) => {
  const mine = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const theirs = await routedShare(edge, other, { target: backend.url, inspect: true });
  for (let i = 0; i < 3; i++) await edgeRequest(edge.httpPort!, theirs.host, { path: `/theirs/${i}` });
  for (let i = 0; i < MAX * 30; i++) await edgeRequest(edge.httpPort!, mine.host, { path: `/mine/${i}` });
  await edge.inspection!.capture.flushed();
  const list = await listed(hub, mine.zId, MAX);
  t.is(list.length, MAX);
  t.deepEqual(
    list.map((e: { path: string }) => e.path),
    Array.from({ length: MAX }, (_, i) => `/mine/${MAX * 30 - 1 - i}`),
    'the newest, newest first',
  );
  t.deepEqual(
    (await listed(other, theirs.zId, 3)).map((e: { path: string }) => e.path),
    ['/theirs/2', '/theirs/1', '/theirs/0'],
  );
  // the streams themselves are bounded (MAXLEN ~ trims whole nodes), the details follow the summaries, keys name the hub
  const redis = new Redis(process.env.REDIS_URL!);
  try {
    const keys = inspectKeys(process.env.HUB_QUEUE_PREFIX!, hub.hubId, mine.zId);
    t.true(keys.summaries.includes(hub.hubId) && keys.summaries.includes(mine.zId));
    // one entry per batch in each of the three streams, the same ids; the counts say how many exchanges are kept
    const ids = async (key: string) => (await redis.xrange(key, '-', '+')).map(([id]) => id);
    const [summaries, details, counts] = [await ids(keys.summaries), await ids(keys.details), await ids(keys.counts)];
    t.deepEqual(details, summaries, 'the details follow the summaries');
    t.deepEqual(counts, summaries);
    const batches = (await redis.xrange(keys.counts, '-', '+')).map(([, fields]) => Number(fields[1]));
    const kept = batches.reduce((n, c) => n + c, 0);
    // every batch kept is needed for the newest MAX: without the oldest, fewer than MAX would be left
    t.true(kept >= MAX && kept - batches[0] < MAX, `${kept} exchanges kept in batches of ${batches.join(', ')}`);
    for (const key of [keys.summaries, keys.details, keys.counts]) t.true((await redis.pttl(key)) > 0, 'the streams expire after the TTL without writes');
  } finally {
    redis.disconnect();
  }
});

test.serial('replay: the recorded request goes to the target again through the edge, recorded with replayOf; a deleted share is 404', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: `${backend.url}/base`, inspect: true });
  await edgeRequest(edge.httpPort!, host, {
    method: 'PUT',
    path: '/items/9',
    headers: { authorization: 'Bearer top-secret', 'x-visible': 'again' },
    body: 'payload',
  });
  const [original] = await listed(hub, zId, 1);
  const before = seen.length;
  const replay = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${original.id}/replay`);
  t.is(replay.status, 201, replay.text);
  t.is(replay.json.replayOf, original.id);
  t.is(replay.json.method, 'PUT');
  t.is(replay.json.path, '/items/9');
  t.is(replay.json.status, 200);
  t.is(seen.length, before + 1);
  const sent = seen.at(-1)!;
  t.is(sent.url, '/base/items/9');
  t.is(sent.body.toString(), 'payload');
  t.is(sent.headers['x-visible'], 'again');
  t.is(sent.headers.authorization, undefined, 'a credential that was never kept is not sent');
  t.regex(String(sent.headers.via), /^1\.1 /);
  const list = await listed(hub, zId, 2);
  t.is(list[0].id, replay.json.id);
  const detail = (await hub.call('GET', `${hub.h}/shares/${zId}/requests/${replay.json.id}`)).json;
  t.deepEqual(JSON.parse(Buffer.from(detail.response.body, 'base64').toString()), { url: '/base/items/9', length: 7 });
  t.is((await hub.call('POST', `${hub.h}/shares/${zId}/requests/0-1/replay`)).status, 404);

  t.is((await hub.call('DELETE', `${hub.h}/shares/${zId}`)).status, 204);
  const gone = await hub.call('POST', `${hub.h}/shares/${zId}/requests/${original.id}/replay`);
  t.is(gone.status, 404);
  t.is(gone.json.error, 'not_found');
});

test.serial('the live stream sends new exchanges as Server-Sent Events', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const controller = new AbortController();
  const res = await fetch(`${stack.baseUrl}${hub.h}/shares/${zId}/requests/live`, { headers: { authorization: hub.bearer }, signal: controller.signal });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = res.body!.getReader();
  let text = '';
  const read = async (until: RegExp) => {
    while (!until.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
  };
  await read(/: connected/);
  await edgeRequest(edge.httpPort!, host, { path: '/live/1' });
  await read(/\n\n[^]*event: exchange\ndata: .*\n\n/);
  const data = JSON.parse(/data: (.*)\n/.exec(text.slice(text.indexOf('event: exchange')))![1]);
  t.is(data.path, '/live/1');
  t.regex(text, new RegExp(`id: ${data.id}\\n`));
  controller.abort();
});

test.serial('the capture drops (and counts) what Redis cannot take, and never holds a request back', async (t) => {
  const unreachable = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  const capture = new Capture({ redis: unreachable, prefix: 'unused', limits: { max: 10, ttlMs: 60_000, bodyBytes: 16, queue: 2 }, edge: 'test' });
  const route = inspectedRoute('h', 'z', 'http://127.0.0.1:1');
  const empty = { lines: [], body: '', bodyTruncated: false };
  const exchange = recordedExchange(
    { at: Date.now(), u: 0, d: 1000, method: 'GET', path: '/', status: 200, rxBytes: 1, txBytes: 1, clientAddress: '', edge: 'test' },
    empty,
    empty,
  );
  for (let i = 0; i < 5; i++) if (capture.hasRoom()) capture.enqueue(route, exchange);
  await capture.flushed();
  t.is(capture.counts.dropped.queue_full, 3, 'the queue holds two');
  t.is(capture.counts.dropped.redis_unavailable, 2);
  const metrics = await registry.getSingleMetricAsString('edgehub_edge_inspect_dropped_total');
  t.regex(metrics, /reason="queue_full"[^\n]* [1-9]/);
  t.regex(metrics, /reason="redis_unavailable"[^\n]* [1-9]/);
  unreachable.disconnect();
});

test.serial('exchanges of one batch share an entry: each is read by its id, a stream resumes inside a batch, the one-entry form is still read', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  // three exchanges queued at once go in one batch entry
  const capture = edge.inspection!.capture;
  const route = inspectedRoute(hub.hubId, zId, backend.url);
  for (const n of [1, 2, 3]) {
    const summary = {
      at: Date.now(),
      u: Date.now() * 1000 + n,
      d: 1000,
      method: 'GET',
      path: `/batch/${n}`,
      status: 200,
      rxBytes: 1,
      txBytes: 1,
      clientAddress: '127.0.0.1',
      edge: 'test',
    };
    capture.enqueue(route, recordedExchange(summary, { lines: ['host', host], body: '', bodyTruncated: false }, { lines: [], body: '', bodyTruncated: false }));
  }
  await capture.flushed();
  const list = (await listed(hub, zId, 3)) as { id: string; path: string }[];
  const redis = new Redis(process.env.REDIS_URL!);
  try {
    const keys = inspectKeys(process.env.HUB_QUEUE_PREFIX!, hub.hubId, zId);
    const entries = await redis.xrange(keys.summaries, '-', '+');
    t.is(entries.length, 1, 'one entry for the three');
    t.deepEqual(
      list.map((e) => e.id).sort(),
      [0, 1, 2].map((i) => `${entries[0][0]}.${i}`),
    );
    for (const e of list) t.is((await hub.call('GET', `${hub.h}/shares/${zId}/requests/${e.id}`)).json.path, e.path);
    for (const bad of [`${entries[0][0]}.3`, `${entries[0][0]}.x`, `${entries[0][0]}.`, `${entries[0][0]}.00001`, `${entries[0][0]}.01`])
      t.is((await hub.call('GET', `${hub.h}/shares/${zId}/requests/${bad}`)).status, 404, bad);

    // details past ENTRY_BYTES start another entry: reading one exchange never parses more than about that
    for (const n of [4, 5, 6]) {
      const summary = {
        at: Date.now(),
        u: Date.now() * 1000 + n,
        d: 1000,
        method: 'POST',
        path: `/big/${n}`,
        status: 200,
        rxBytes: 1,
        txBytes: 1,
        clientAddress: '127.0.0.1',
        edge: 'test',
      };
      capture.enqueue(
        route,
        recordedExchange(summary, { lines: ['host', host], body: 'QUJD'.repeat(150_000), bodyTruncated: true }, { lines: [], body: '', bodyTruncated: false }),
      );
    }
    await capture.flushed();
    t.is((await redis.xlen(keys.summaries)) - 1, 3, 'three entries of 600 kB');
    const big = (await hub.call('GET', `${hub.h}/shares/${zId}/requests`)).json.filter((e: { path: string }) => e.path.startsWith('/big/'));
    t.is(big.length, 3);
    for (const e of big) t.is((await hub.call('GET', `${hub.h}/shares/${zId}/requests/${e.id}`)).json.request.body.length, 600_000);
    for (const [, fields] of (await redis.xrange(keys.details, '-', '+')).slice(1)) t.is(JSON.parse(fields[1]).length, 1);

    // a reconnecting stream gets the rest of the batch its last event was in, and nothing before
    const oldest = `${entries[0][0]}.0`;
    const controller = new AbortController();
    const res = await fetch(`${stack.baseUrl}${hub.h}/shares/${zId}/requests/live`, {
      headers: { authorization: hub.bearer, 'last-event-id': oldest },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/event: exchange/g) ?? []).length < 2) text += Buffer.from((await reader.read()).value!).toString();
    controller.abort();
    t.deepEqual([...text.matchAll(/^id: (.*)$/gm)].map((m) => m[1]).slice(0, 2), [`${entries[0][0]}.1`, `${entries[0][0]}.2`]);

    // an entry of the earlier form (one exchange each, fields `s` and `d`) is listed and read by its entry id
    const at = Date.now();
    const summary = {
      at,
      u: at * 1000 + 999_000,
      d: 1500,
      method: 'GET',
      path: '/earlier',
      status: 200,
      rxBytes: 10,
      txBytes: 20,
      clientAddress: '127.0.0.1',
      edge: 'e',
    };
    const id = await redis.xadd(keys.summaries, '*', 's', JSON.stringify(summary));
    await redis.xadd(keys.details, id!, 'd', JSON.stringify([['host', host], '', 0, ['content-type', 'text/plain'], 'aGk=', 0]));
    const earlier = (await requests(hub, zId)).json.find((e: { path: string }) => e.path === '/earlier');
    t.is(earlier?.id, id);
    const detail = (await hub.call('GET', `${hub.h}/shares/${zId}/requests/${id}`)).json;
    t.deepEqual(detail.response, { headers: [['content-type', 'text/plain']], body: 'aGk=', bodyTruncated: false });
    t.is((await hub.call('GET', `${hub.h}/shares/${zId}/requests/${id}.0`)).status, 404, 'the earlier form has no index');
  } finally {
    redis.disconnect();
  }
});
