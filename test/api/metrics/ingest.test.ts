import test from 'ava';
import { QueryTypes } from 'sequelize';
import { db } from '../../../shared/db.js';
import { type HubFixture, useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

const stack = useStack(test, { workers: false });

const ingest = (body: unknown, auth = stack.admin) => stack.call('POST', '/admin/v1/usage', { auth, body });

async function environment(hub: HubFixture): Promise<string> {
  const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: 'agent' } });
  if (r.status !== 201) throw new Error(`environment: ${r.status} ${r.text}`);
  return r.json.envZId;
}

async function storedSamples(hubId: string): Promise<{ share_id: string | null; env_z_id: string | null; rx: string; tx: string; ts: Date }[]> {
  return db().query('SELECT share_id, env_z_id, rx::text, tx::text, ts FROM usage_samples WHERE hub_id = $1 ORDER BY ts, rx', {
    bind: [hubId],
    type: QueryTypes.SELECT,
  });
}

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

test('a valid batch is stored whole and answered 202 {accepted}', async (t) => {
  const hub = await stack.hub();
  const env = await environment(hub);
  const samples = [
    { hubId: hub.hubId, rx: 10, tx: 20, timestamp: minutesAgo(3) },
    { hubId: hub.hubId, envZId: env, rx: 0, tx: 7, timestamp: '2026-01-31T12:00:00.123456+02:00' },
    { hubId: hub.hubId, envZId: env, shareId: null, rx: 9_007_199_254_740_991, tx: 1, timestamp: minutesAgo(0) },
    { hubId: hub.hubId, rx: 5, tx: 5, timestamp: '2026-01-31t12:00:00z' },
  ];
  const r = await ingest({ samples });
  t.is(r.status, 202, r.text);
  t.deepEqual(r.json, { accepted: 4 });
  const stored = await storedSamples(hub.hubId);
  t.is(stored.length, 4);
  t.is(stored.find((s) => s.rx === '5')!.ts.toISOString(), '2026-01-31T12:00:00.000Z');
  // the offset and the microseconds survive exactly
  const offsetSample = stored.find((s) => s.rx === '0')!;
  t.is(offsetSample.ts.toISOString(), '2026-01-31T10:00:00.123Z');
  const [{ us }] = await db().query<{ us: string }>(`SELECT extract(microseconds FROM ts)::text AS us FROM usage_samples WHERE hub_id = $1 AND rx = 0`, {
    bind: [hub.hubId],
    type: QueryTypes.SELECT,
  });
  t.is(us, '123456');
  t.true(stored.some((s) => s.rx === '9007199254740991' && s.env_z_id === env));
});

test('an empty batch is accepted as 0', async (t) => {
  const r = await ingest({ samples: [] });
  t.is(r.status, 202);
  t.deepEqual(r.json, { accepted: 0 });
});

test('a bad sample rejects the whole batch with 400 naming its index; nothing is stored', async (t) => {
  const hub = await stack.hub();
  const other = await stack.hub();
  const env = await environment(hub);
  const otherEnv = await environment(other);
  const good = (m: number) => ({ hubId: hub.hubId, envZId: env, rx: 1, tx: 2, timestamp: minutesAgo(m) });
  const future = new Date(Date.now() + 10 * 60_000).toISOString();
  const cases: [string, Record<string, unknown> | unknown, RegExp][] = [
    ['negative rx', { ...good(1), rx: -1 }, /'rx' must be a non-negative integer/],
    ['fractional tx', { ...good(1), tx: 1.5 }, /'tx' must be a non-negative integer/],
    ['string rx', { ...good(1), rx: '5' }, /'rx' must be a non-negative integer/],
    ['unsafe integer', { ...good(1), rx: 2 ** 60 }, /'rx' must be a non-negative integer/],
    ['missing tx', { hubId: hub.hubId, rx: 1, timestamp: minutesAgo(1) }, /'tx' is required/],
    ['missing hubId', { rx: 1, tx: 1, timestamp: minutesAgo(1) }, /'hubId' is required/],
    ['unknown hub', { ...good(1), envZId: undefined, hubId: 'no-such-hub' }, /hub 'no-such-hub' not found/],
    ['environment of another hub', { ...good(1), envZId: otherEnv }, new RegExp(`environment '${otherEnv}' not found in hub '${hub.hubId}'`)],
    ['unknown environment', { ...good(1), envZId: 'nope' }, /environment 'nope' not found/],
    ['unknown share', { ...good(1), shareId: 'no-such-share' }, /share 'no-such-share' not found in hub/],
    ['empty share id', { ...good(1), shareId: '' }, /'shareId' must be a non-empty string/],
    ['timestamp without zone', { ...good(1), timestamp: '2026-01-31T12:00:00' }, /RFC 3339/],
    ['impossible date', { ...good(1), timestamp: '2026-02-30T12:00:00Z' }, /RFC 3339/],
    ['timestamp as number', { ...good(1), timestamp: Date.now() }, /'timestamp' is required and must be an RFC 3339 string/],
    ['timestamp before 1970', { ...good(1), timestamp: '0000-01-01T00:00:00Z' }, /before 1970/],
    ['future timestamp', { ...good(1), timestamp: future }, /in the future/],
    ['unknown property', { ...good(1), bytes: 3 }, /unknown property 'bytes'/],
    ['not an object', 42, /must be an object/],
  ];
  for (const [what, bad, message] of cases) {
    const r = await ingest({ samples: [good(5), good(4), good(3), bad, good(2)] });
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.samples[3]');
    t.regex(r.json.message, message, `${what}: says what is wrong with the sample (the point of this test)`);
  }
  t.deepEqual(await storedSamples(hub.hubId), [], 'no sample of a rejected batch is stored');
});

test('a malformed envelope is 400', async (t) => {
  const hub = await stack.hub();
  const sample = { hubId: hub.hubId, rx: 1, tx: 1, timestamp: minutesAgo(1) };
  const cases: [unknown, RegExp][] = [
    [{}, /'\$\.samples' is required and must be of type array/],
    [{ samples: 'x' }, /must be of type array \(received string\)/],
    [{ samples: [sample], extra: 1 }, /unknown property '\$\.extra'/],
    [[sample], /must be an object with a 'samples' array/],
    [{ samples: Array.from({ length: 10_001 }, () => sample) }, /10001 samples; at most 10000/],
  ];
  for (const [body, message] of cases) {
    const r = await ingest(body);
    assertRefused(t, r, 400, 'invalid_request', 'EH_INVALID_REQUEST');
    t.regex(r.json.message, message, 'says what is wrong with the envelope (the point of this test)');
  }
  t.deepEqual(await storedSamples(hub.hubId), []);
});

test('ingestion is for the operator only', async (t) => {
  const hub = await stack.hub();
  const body = { samples: [{ hubId: hub.hubId, rx: 1, tx: 1, timestamp: minutesAgo(1) }] };
  const asHub = await ingest(body, hub.bearer);
  t.is(asHub.status, 403);
  t.is(asHub.json.error, 'forbidden');
  const anonymous = await ingest(body, '');
  t.is(anonymous.status, 401);
  t.is(anonymous.json.error, 'unauthorized');
  t.deepEqual(await storedSamples(hub.hubId), []);
});
