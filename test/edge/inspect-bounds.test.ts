/**
 * What inspection keeps, and for whom, through a real edge and the real API: the default redaction list (query
 * parameters of the recorded path, API-key and token headers, form fields), the bounds per hub (bytes, shares with
 * recordings) with another hub still recording, recordings deleted with their share and with their hub, and replays
 * fair per hub (one hub's slow replays never hold every slot of an edge).
 */
import { Redis } from 'ioredis';
import test from 'ava';
import { resetConfig } from '../../shared/config.js';
import { boundKeys, inspectKeys } from '../../shared/inspect/store.js';
import { edgeRequest, routedShare, useBackend, useTestEdge } from '../helpers/edge.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const HUB_BYTES = 200_000;
const HUB_SHARES = 2;
const stack = useStack(test, {
  env: { HUB_INSPECT_BODY_BYTES: '2048', HUB_INSPECT_HUB_BYTES: String(HUB_BYTES), HUB_INSPECT_HUB_SHARES: String(HUB_SHARES), HUB_EDGE_FLUSH_MS: '600000' },
});
/** Requests to /slow wait while `holding` (replays of it), until release(). */
let holding = false;
let held: (() => void)[] = [];
const release = () => {
  holding = false;
  for (const go of held) go();
  held = [];
};
const backend = useBackend(test, stack, (req, res) => {
  req.resume();
  if (req.url === '/slow' && holding) return void held.push(() => res.end('slow'));
  res.setHeader('location', '/next?token=LOCATION-SECRET&page=2');
  res.end('x'.repeat(req.url?.startsWith('/big') ? 2000 : 10));
});
const edge = useTestEdge(test, stack);
let hub: HubFixture;
let other: HubFixture;
let redis: Redis;

test.before(async () => {
  [hub, other] = await Promise.all([stack.hub(), stack.hub()]);
  redis = new Redis(process.env.REDIS_URL!);
});
test.after.always(() => {
  release();
  redis?.disconnect();
});

const prefix = () => process.env.HUB_QUEUE_PREFIX!;
const requests = (h: HubFixture, zId: string) => h.call('GET', `${h.h}/shares/${zId}/requests`);
const listed = (h: HubFixture, zId: string, n: number) =>
  waitFor(
    async () => {
      const r = await requests(h, zId);
      return r.status === 200 && r.json.length >= n && r.json;
    },
    { what: `${n} exchanges listed` },
  );
const header = (pairs: [string, string][], name: string) => pairs.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);

test.serial('redaction: the listed query parameters (in the listed path too), API-key and token headers, form fields', async (t) => {
  const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
  const secrets = [
    'AT-SECRET',
    'AK-SECRET',
    'TK-SECRET',
    'XAPI-SECRET',
    'XAUTH-SECRET',
    'AMZ-SECRET',
    'CSRF-SECRET',
    'PW-SECRET',
    'REFERER-SECRET',
    'LOCATION-SECRET',
  ];
  const r = await edgeRequest(edge.httpPort!, host, {
    method: 'POST',
    path: '/login?access_token=AT-SECRET&api_key=AK-SECRET&Token=TK-SECRET&page=7',
    headers: {
      'x-api-key': 'XAPI-SECRET',
      'X-Auth-Token': 'XAUTH-SECRET',
      'x-amz-security-token': 'AMZ-SECRET',
      'x-csrf-token': 'CSRF-SECRET',
      referer: 'http://example.test/from?access_token=REFERER-SECRET',
      'x-visible': 'kept',
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'user=alice&password=PW-SECRET&remember=1',
  });
  t.is(r.status, 200);
  const [summary] = await listed(hub, zId, 1);
  t.is(summary.path, '/login?access_token=[redacted]&api_key=[redacted]&Token=[redacted]&page=7');
  const detail = await hub.call('GET', `${hub.h}/shares/${zId}/requests/${summary.id}`);
  t.is(detail.json.path, summary.path);
  for (const name of ['x-api-key', 'x-auth-token', 'x-amz-security-token', 'x-csrf-token'])
    t.deepEqual(header(detail.json.request.headers, name), ['[redacted]'], name);
  t.deepEqual(header(detail.json.request.headers, 'x-visible'), ['kept']);
  t.deepEqual(header(detail.json.request.headers, 'referer'), ['http://example.test/from?access_token=[redacted]']);
  t.deepEqual(header(detail.json.response.headers, 'location'), ['/next?token=[redacted]&page=2']);
  t.is(Buffer.from(detail.json.request.body, 'base64').toString(), 'user=alice&password=[redacted]&remember=1');
  const everything =
    JSON.stringify([await requests(hub, zId), detail.json]) + JSON.stringify(await redis.xrange(inspectKeys(prefix(), hub.hubId, zId).details, '-', '+'));
  for (const secret of secrets) t.false(everything.includes(secret), secret);
});

test.serial(
  "bounds per hub: a share keeps its part of the hub's bytes, a hub records on at most HUB_INSPECT_HUB_SHARES shares; another hub still records",
  async (t) => {
    const mine = await stack.hub();
    const busy = await routedShare(edge, mine, { target: backend.url, inspect: true });
    for (let i = 0; i < 40; i++) await edgeRequest(edge.httpPort!, busy.host, { method: 'POST', path: `/big/${i}`, body: 'b'.repeat(2000) });
    await edge.inspection!.capture.flushed();
    const kept = (await listed(mine, busy.zId, 1)) as { path: string }[];
    t.true(kept.length < 40, `${kept.length} of 40 kept`);
    t.is(kept[0].path, '/big/39', 'the newest are kept');
    const share = await redis.hget(boundKeys(prefix(), mine.hubId).hub, busy.zId);
    t.true(Number(share?.split(':')[0]) <= HUB_BYTES / HUB_SHARES, `the share holds ${share}`);

    // the hub's other shares: one more records (two shares with recordings), the next records nothing
    const dropped = () => edge.inspection!.capture.counts.dropped.bound_shares;
    const second = await routedShare(edge, mine, { target: backend.url, inspect: true });
    await edgeRequest(edge.httpPort!, second.host, { path: '/second' });
    t.is((await listed(mine, second.zId, 1))[0].path, '/second');
    const third = await routedShare(edge, mine, { target: backend.url, inspect: true });
    const before = dropped();
    await edgeRequest(edge.httpPort!, third.host, { path: '/third' });
    await edge.inspection!.capture.flushed();
    t.is(dropped(), before + 1, 'dropped and counted');
    t.deepEqual((await requests(mine, third.zId)).json, []);

    // another hub is held to its own bounds only
    const theirs = await routedShare(edge, other, { target: backend.url, inspect: true });
    await edgeRequest(edge.httpPort!, theirs.host, { path: '/theirs' });
    t.is((await listed(other, theirs.zId, 1))[0].path, '/theirs');

    // a deleted share's recordings are gone from Redis at once, and its place is free
    const keys = inspectKeys(prefix(), mine.hubId, busy.zId);
    t.is(await redis.exists(keys.summaries, keys.details, keys.counts), 3);
    t.is((await mine.call('DELETE', `${mine.h}/shares/${busy.zId}`)).status, 204);
    t.is(await redis.exists(keys.summaries, keys.details, keys.counts), 0);
    t.is(await redis.hget(boundKeys(prefix(), mine.hubId).hub, busy.zId), null);
    await edgeRequest(edge.httpPort!, third.host, { path: '/third-again' });
    t.is((await listed(mine, third.zId, 1))[0].path, '/third-again');
  },
);

test.serial("a deleted hub's recordings are gone from Redis", async (t) => {
  const doomed = await stack.hub();
  const shares = [
    await routedShare(edge, doomed, { target: backend.url, inspect: true }),
    await routedShare(edge, doomed, { target: backend.url, inspect: true }),
  ];
  for (const s of shares) await edgeRequest(edge.httpPort!, s.host, { path: '/doomed' });
  for (const s of shares) await listed(doomed, s.zId, 1);
  const keys = shares.flatMap((s) => Object.values(inspectKeys(prefix(), doomed.hubId, s.zId)).slice(0, 3));
  t.is(await redis.exists(...keys), keys.length);
  t.is((await stack.call('DELETE', `/admin/v1/hubs/${doomed.hubId}`, { auth: stack.admin })).status, 204);
  t.is(await redis.exists(...keys, boundKeys(prefix(), doomed.hubId).hub), 0);
  t.is(await redis.hget(boundKeys(prefix(), doomed.hubId).hubs, doomed.hubId), null);
});

test.serial(
  "replays are fair per hub: one hub's slow replays hold at most its part of the edge's slots, another hub's replay completes meanwhile",
  async (t) => {
    const fresh = await Promise.all([stack.hub(), stack.hub()]);
    const [a, b] = fresh;
    const slow = await routedShare(edge, a, { target: backend.url, inspect: true });
    const fast = await routedShare(edge, b, { target: backend.url, inspect: true });
    await edgeRequest(edge.httpPort!, slow.host, { path: '/slow' });
    await edgeRequest(edge.httpPort!, fast.host, { path: '/fast' });
    const [slowOne] = await listed(a, slow.zId, 1);
    const [fastOne] = await listed(b, fast.zId, 1);

    holding = true;
    let aDone = 0;
    const aReplays = Array.from({ length: 16 }, () =>
      a.call('POST', `${a.h}/shares/${slow.zId}/requests/${slowOne.id}/replay`).then((r) => {
        aDone++;
        return r.status;
      }),
    );
    // the edge carries as many of hub A's replays as one hub may (HUB_INSPECT_REPLAYS_PER_HUB, 4 of 8)
    await waitFor(async () => held.length >= 4, { what: "hub A's replays at the target" });
    const bReplay = b.call('POST', `${b.h}/shares/${fast.zId}/requests/${fastOne.id}/replay`).then((r) => ({ status: r.status, aDone, aHeld: held.length }));
    // hub B's replay is not timed: A's are let go once it completed, or after a while without it
    const outcome = await Promise.race([bReplay, new Promise<undefined>((resolve) => setTimeout(resolve, 20_000))]);
    release();
    const late = outcome ?? (await bReplay);
    t.is(late.status, 201);
    t.truthy(outcome, "hub B's replay completed while hub A's were held");
    t.is(late.aDone, 0, "none of hub A's replays had completed");
    t.is(late.aHeld, 4, "hub A held no more than its part of the edge's slots");
    t.deepEqual(new Set(await Promise.all(aReplays)), new Set([201]));
  },
);

test.serial('the redaction lists are settings: what they name is redacted, what they leave out is kept; credentials always go', async (t) => {
  const saved = { params: process.env.HUB_INSPECT_REDACT_PARAMS, headers: process.env.HUB_INSPECT_REDACT_HEADERS };
  Object.assign(process.env, { HUB_INSPECT_REDACT_PARAMS: 'session,Pin', HUB_INSPECT_REDACT_HEADERS: 'X-Custom-Secret' });
  resetConfig();
  try {
    const { zId, host } = await routedShare(edge, hub, { target: backend.url, inspect: true });
    await edgeRequest(edge.httpPort!, host, {
      method: 'POST',
      path: '/set?session=SESSION-SECRET&token=visible-token',
      headers: {
        'x-custom-secret': 'CUSTOM-SECRET',
        'x-api-key': 'visible-key',
        authorization: 'Bearer ALWAYS-SECRET',
        'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      },
      body: 'pin=PIN-SECRET&password=visible-password',
    });
    const [summary] = await listed(hub, zId, 1);
    t.is(summary.path, '/set?session=[redacted]&token=visible-token');
    const detail = (await hub.call('GET', `${hub.h}/shares/${zId}/requests/${summary.id}`)).json;
    t.deepEqual(header(detail.request.headers, 'x-custom-secret'), ['[redacted]']);
    t.deepEqual(header(detail.request.headers, 'x-api-key'), ['visible-key']);
    t.deepEqual(header(detail.request.headers, 'authorization'), ['[redacted]']);
    t.is(Buffer.from(detail.request.body, 'base64').toString(), 'pin=[redacted]&password=visible-password');
    t.false(JSON.stringify(detail).match(/SESSION-SECRET|CUSTOM-SECRET|ALWAYS-SECRET|PIN-SECRET/) !== null);
  } finally {
    for (const [name, value] of [
      ['HUB_INSPECT_REDACT_PARAMS', saved.params],
      ['HUB_INSPECT_REDACT_HEADERS', saved.headers],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    resetConfig();
  }
});
