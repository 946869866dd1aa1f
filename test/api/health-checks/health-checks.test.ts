import test from 'ava';
import { freePort } from '../../../scripts/services/index.js';
import { queue } from '../../../domain/jobs/queues.js';
import reconcile from '../../../workers/schedules/healthChecks.js';
import { startHttpTarget, type HttpTarget } from '../../helpers/httpTarget.js';
import { type HubFixture, useStack, waitFor } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

let target: HttpTarget;
test.before(async () => {
  target = await startHttpTarget();
});
const stack = useStack(test, { env: { HUB_HEALTH_CHECK_MIN_INTERVAL_SECONDS: '1' } });
test.after.always(async () => {
  await target?.close();
});

const hc = (hub: HubFixture, id = '') => `${hub.h}/health-checks${id ? `/${id}` : ''}`;
const check = (overrides: Record<string, unknown> = {}) => ({
  name: 'api',
  method: 'GET',
  path: '/status/200',
  expectedStatus: 200,
  target: target.url,
  ...overrides,
});
const create = async (hub: HubFixture, body: unknown) => {
  const r = await hub.call('POST', hc(hub), { body });
  if (r.status !== 201) throw new Error(`create failed: ${r.status} ${r.text}`);
  return r.json;
};
/** Requests the target saw whose URL carries `tag` (tests run at once against one target). */
const sent = (tag: string) => target.requests.filter((q) => q.url.includes(tag)).map((q) => `${q.method} ${q.url}`);
const scheduler = (id: string) => queue('health-checks').getJobScheduler(`health-check:${id}`);

test('CRUD: create answers id, name, enabled true; get, list, PATCH, PUT, delete', async (t) => {
  const hub = await stack.hub();
  const created = await hub.call('POST', hc(hub), { body: { name: 'spec-example', method: 'GET', path: '/health', expectedStatus: 200 } });
  t.is(created.status, 201, created.text);
  t.like(created.json, {
    name: 'spec-example',
    enabled: true,
    method: 'GET',
    path: '/health',
    expectedStatus: 200,
    target: null,
    timeoutMs: 5000,
    intervalSeconds: 0,
    lastResult: null,
  });
  t.is(typeof created.json.id, 'string');
  const id = created.json.id;
  t.deepEqual((await hub.call('GET', `${hub.h2}/health-checks/${id}`)).json, created.json);
  await create(hub, check({ name: 'second' }));
  const list = await hub.call('GET', `${hc(hub)}?page=0&size=1&sort=name,asc`);
  t.is(list.json.totalElements, 2);
  t.deepEqual(
    list.json.content.map((c: { name: string }) => c.name),
    ['second'],
  );

  const patched = await hub.call('PATCH', hc(hub, id), { body: { enabled: false } });
  t.is(patched.status, 200);
  t.like(patched.json, { enabled: false, name: 'spec-example' });
  const put = await hub.call('PUT', hc(hub, id), { body: { name: 'renamed', method: 'head', path: '/ping', expectedStatus: 204, enabled: true } });
  t.is(put.status, 200, put.text);
  t.like(put.json, { name: 'renamed', method: 'HEAD', path: '/ping', expectedStatus: 204, enabled: true });
  const putMissing = await hub.call('PUT', hc(hub, id), { body: { name: 'x', method: 'GET', path: '/', expectedStatus: 200 } });
  assertRefused(t, putMissing, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.enabled');

  const removed = await hub.call('DELETE', hc(hub, id));
  t.is(removed.status, 204);
  t.is(removed.text, '');
  t.is((await hub.call('GET', hc(hub, id))).status, 404);
});

test('execute sends a real request, answers the result, stores it and records an execution (both path forms)', async (t) => {
  const hub = await stack.hub();
  const { id } = await create(hub, check({ method: 'POST', path: '/status/200?probe=1' }));
  let n = 0;
  for (const path of [`${hc(hub, id)}:execute`, `${hc(hub, id)}/execute`, `${hub.h2}/health-checks/${id}:execute`]) {
    const before = sent('probe=1').length;
    const r = await hub.call('POST', path);
    t.is(r.status, 200, `${path}: ${r.text}`);
    t.like(r.json, { healthCheckId: id, result: 'SUCCESS', status: 200 });
    t.true(Number.isInteger(r.json.latencyMs) && r.json.latencyMs >= 0);
    t.deepEqual(sent('probe=1').slice(before), ['POST /status/200?probe=1']);
    n++;
  }
  const stored = (await hub.call('GET', hc(hub, id))).json;
  t.like(stored.lastResult, { result: 'SUCCESS', status: 200 });
  const executions = await hub.call('GET', `${hub.h}/executions?resourceId=${id}&type=health-checks.execute`);
  t.is(executions.json.totalElements, n);
  t.like(executions.json.content[0], { status: 'SUCCEEDED', resourceType: 'healthCheck' });
});

test('FAILURE on another status, TIMEOUT when slow, ERROR when refused: never a 5xx', async (t) => {
  const hub = await stack.hub();
  const failure = await create(hub, check({ path: '/status/503' }));
  const r1 = await hub.call('POST', `${hc(hub, failure.id)}:execute`);
  t.is(r1.status, 200);
  t.like(r1.json, { result: 'FAILURE', status: 503 });

  const slow = await create(hub, check({ path: '/slow/10000', timeoutMs: 150 }));
  const r2 = await hub.call('POST', `${hc(hub, slow.id)}:execute`);
  t.is(r2.status, 200);
  t.like(r2.json, { result: 'TIMEOUT', status: null });
  t.regex(r2.json.message, /150 ms/);

  const closedPort = await freePort();
  const refused = await create(hub, check({ target: `http://127.0.0.1:${closedPort}` }));
  const r3 = await hub.call('POST', `${hc(hub, refused.id)}:execute`);
  t.is(r3.status, 200);
  t.like(r3.json, { result: 'ERROR', status: null });
  t.is(r3.json.message, 'unreachable', 'what the socket said is not told (a refused port and an open one look the same)');
  t.like((await hub.call('GET', hc(hub, refused.id))).json.lastResult, { result: 'ERROR' });

  const noTarget = await create(hub, { name: 'bare', method: 'GET', path: '/', expectedStatus: 200 });
  const r4 = await hub.call('POST', `${hc(hub, noTarget.id)}:execute`);
  assertRefused(t, r4, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.target');
});

test('test runs the stored check with body overrides and saves nothing', async (t) => {
  const hub = await stack.hub();
  const stored = await create(hub, check({ path: '/status/500' }));
  const plain = await hub.call('POST', `${hc(hub, stored.id)}:test`);
  t.is(plain.status, 200);
  t.like(plain.json, { healthCheckId: stored.id, result: 'FAILURE', status: 500 });
  const overridden = await hub.call('POST', `${hc(hub, stored.id)}/test`, { body: { method: 'HEAD', path: '/status/404?dry-run', expectedStatus: 404 } });
  t.is(overridden.status, 200, overridden.text);
  t.like(overridden.json, { healthCheckId: stored.id, result: 'SUCCESS', status: 404 });
  t.deepEqual(sent('dry-run'), ['HEAD /status/404?dry-run']);
  const after = (await hub.call('GET', hc(hub, stored.id))).json;
  t.like(after, { method: 'GET', path: '/status/500', expectedStatus: 200, lastResult: null });
  t.is((await hub.call('GET', `${hub.h}/executions?resourceId=${stored.id}`)).json.totalElements, 0);
  const bad = await hub.call('POST', `${hc(hub, stored.id)}:test`, { body: { target: 'file:///etc/passwd' } });
  assertRefused(t, bad, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.target');
});

test('intervalSeconds > 0 runs on schedule through a job scheduler; disabling or deleting removes it', async (t) => {
  const hub = await stack.hub();
  const { id } = await create(hub, check({ path: `/status/200?scheduled`, intervalSeconds: 1 }));
  t.truthy(await scheduler(id));
  const runs = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/executions?resourceId=${id}&type=health-checks.scheduledRun&status=SUCCEEDED`);
      return r.json.totalElements >= 2 && r.json;
    },
    { what: 'two scheduled runs' },
  );
  t.like(runs.content[0], { resourceType: 'healthCheck', createdBy: 'scheduler' });
  t.true(sent('?scheduled').length >= 2);
  t.like((await hub.call('GET', hc(hub, id))).json.lastResult, { result: 'SUCCESS', status: 200 });

  t.is((await hub.call('PATCH', hc(hub, id), { body: { enabled: false } })).status, 200);
  t.is(await scheduler(id), undefined, 'disabled: scheduler removed');
  t.is((await hub.call('PATCH', hc(hub, id), { body: { enabled: true, intervalSeconds: 7 } })).status, 200);
  t.is((await scheduler(id))?.every, 7000, 'the new interval applies');
  t.is((await hub.call('PATCH', hc(hub, id), { body: { intervalSeconds: 0 } })).status, 200);
  t.is(await scheduler(id), undefined, 'manual only: scheduler removed');
  t.is((await hub.call('PATCH', hc(hub, id), { body: { intervalSeconds: 5 } })).status, 200);
  t.truthy(await scheduler(id));
  t.is((await hub.call('DELETE', hc(hub, id))).status, 204);
  t.is(await scheduler(id), undefined, 'deleted: scheduler removed');
});

test('bad input is a 400 naming the property; nothing is written', async (t) => {
  const hub = await stack.hub();
  const cases: [string, unknown, string][] = [
    ['no name', { method: 'GET', path: '/', expectedStatus: 200 }, '$.name'],
    ['unknown method', check({ method: 'FETCH' }), '$.method'],
    ['path without slash', check({ path: 'health' }), '$.path'],
    ['status out of range', check({ expectedStatus: 99 }), '$.expectedStatus'],
    ['status as string', check({ expectedStatus: '200' }), '$.expectedStatus'],
    ['ftp target', check({ target: 'ftp://example.com' }), '$.target'],
    ['target with credentials', check({ target: 'http://u:p@example.com' }), '$.target'],
    ['timeout zero', check({ timeoutMs: 0 }), '$.timeoutMs'],
    ['negative interval', check({ intervalSeconds: -1 }), '$.intervalSeconds'],
    ['scheduled without target', { name: 'x', method: 'GET', path: '/', expectedStatus: 200, intervalSeconds: 10 }, '$.target'],
  ];
  for (const [, body, names] of cases) assertRefused(t, await hub.call('POST', hc(hub), { body }), 400, 'invalid_request', 'EH_INVALID_REQUEST', names);
  t.is((await hub.call('GET', hc(hub))).json.totalElements, 0);
  const { id } = await create(hub, check());
  const unknownField = await hub.call('PATCH', hc(hub, id), { body: { enabeld: false } });
  assertRefused(t, unknownField, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.enabeld');
  const unschedulable = await hub.call('PATCH', hc(hub, id), { body: { target: null, intervalSeconds: 30 } });
  assertRefused(t, unschedulable, 400, 'invalid_request', 'EH_INVALID_REQUEST', '$.target');
  t.like((await hub.call('GET', hc(hub, id))).json, { target: target.url, intervalSeconds: 0 }, 'a refused PATCH changes nothing');
});

test('hub isolation: another hub gets 404 for every operation and 403 on the foreign path', async (t) => {
  const a = await stack.hub();
  const b = await stack.hub();
  const { id } = await create(a, check({ path: '/status/200?isolated' }));
  const ops: [string, string, unknown?][] = [
    ['GET', ''],
    ['PATCH', '', { enabled: false }],
    ['PUT', '', { name: 'x', method: 'GET', path: '/', expectedStatus: 200, enabled: true }],
    ['POST', ':execute'],
    ['POST', '/test'],
    ['DELETE', ''],
  ];
  for (const [method, suffix, body] of ops) {
    const r = await b.call(method, hc(b, id) + suffix, { body });
    t.is(r.status, 404, `${method} ${suffix}`);
    t.is(r.json.error, 'not_found');
    const foreign = await b.call(method, hc(a, id) + suffix, { body });
    t.is(foreign.status, 403, `${method} ${suffix} on the foreign path`);
  }
  t.deepEqual(sent('isolated'), [], 'no probe was sent for another hub');
  t.like((await a.call('GET', hc(a, id))).json, { enabled: true, name: 'api' });
});

test('the clock reconciliation restores a lost scheduler and removes one without a check', async (t) => {
  const hub = await stack.hub();
  const { id } = await create(hub, check({ path: '/status/200?reconciled', intervalSeconds: 600 }));
  await queue('health-checks').removeJobScheduler(`health-check:${id}`);
  await queue('health-checks').upsertJobScheduler('health-check:no-such-check', { every: 600_000 }, { name: 'health-checks.scheduledRun', data: {} });
  await reconcile.run();
  t.is((await scheduler(id))?.every, 600_000);
  t.is(await scheduler('no-such-check'), undefined);
});
