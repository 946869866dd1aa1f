import test from 'ava';
import { db } from '../../../shared/db.js';
import { type HubFixture, useStack } from '../../helpers/stack.js';
import { assertRefused } from '../../helpers/refusals.js';

/**
 * Tenant quotas with clear answers: the shortest health-check interval (400), the scheduled
 * health checks a hub may have (429), and how deep a list may be paged (400), a page past the end costing no more
 * than the first.
 */

const stack = useStack(test, {
  workers: false,
  env: { HUB_HEALTH_CHECK_MIN_INTERVAL_SECONDS: '30', HUB_MAX_SCHEDULED_HEALTH_CHECKS: '3', HUB_MAX_LIST_OFFSET: '100' },
});

const check = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  method: 'GET',
  path: '/health',
  expectedStatus: 200,
  target: 'http://127.0.0.1:9',
  intervalSeconds: 60,
  ...extra,
});

test('a health-check interval below the minimum is a 400 naming the minimum; 0 (manual) is fine', async (t) => {
  const hub = await stack.hub();
  const fast = await hub.call('POST', `${hub.h}/health-checks`, { body: check('fast', { intervalSeconds: 5 }) });
  // the message names the minimum
  assertRefused(t, fast, 400, 'invalid_request', 'EH_CHECK_INTERVAL_TOO_SHORT', ['$.intervalSeconds', 'at least 30 seconds (got 5)']);
  const manual = await hub.call('POST', `${hub.h}/health-checks`, { body: check('manual', { intervalSeconds: 0 }) });
  t.is(manual.status, 201, manual.text);
  const patched = await hub.call('PATCH', `${hub.h}/health-checks/${manual.json.id}`, { body: { intervalSeconds: 29 } });
  assertRefused(t, patched, 400, 'invalid_request', 'EH_CHECK_INTERVAL_TOO_SHORT');
  t.is((await hub.call('GET', `${hub.h}/health-checks/${manual.json.id}`)).json.intervalSeconds, 0, 'nothing written');
  const list = await hub.call('GET', `${hub.h}/health-checks`);
  t.is(list.json.totalElements, 1, 'the refused check was not created');
});

test('at most HUB_MAX_SCHEDULED_HEALTH_CHECKS scheduled checks per hub: 429, also under concurrent creation', async (t) => {
  const hub = await stack.hub();
  const answers = await Promise.all([1, 2, 3, 4, 5].map((i) => hub.call('POST', `${hub.h}/health-checks`, { body: check(`scheduled-${i}`) })));
  t.deepEqual(answers.map((a) => a.status).sort(), [201, 201, 201, 429, 429]);
  const refused = answers.find((a) => a.status === 429)!;
  // the message names the quota
  assertRefused(t, refused, 429, 'quota_exceeded', 'EH_QUOTA_SCHEDULED_CHECKS', 'the most allowed (3)');

  // manual and disabled checks do not count; enabling one beyond the quota is refused and changes nothing
  const manual = await hub.call('POST', `${hub.h}/health-checks`, { body: check('manual', { intervalSeconds: 0 }) });
  t.is(manual.status, 201);
  const disabled = await hub.call('POST', `${hub.h}/health-checks`, { body: check('disabled', { enabled: false }) });
  t.is(disabled.status, 201);
  const enable = await hub.call('PATCH', `${hub.h}/health-checks/${disabled.json.id}`, { body: { enabled: true } });
  t.is(enable.status, 429);
  t.false((await hub.call('GET', `${hub.h}/health-checks/${disabled.json.id}`)).json.enabled);
  const schedule = await hub.call('PATCH', `${hub.h}/health-checks/${manual.json.id}`, { body: { intervalSeconds: 60 } });
  t.is(schedule.status, 429);

  // freeing a place lets the next one in; a scheduled check keeps its place when edited
  const first = answers.find((a) => a.status === 201)!;
  t.is((await hub.call('PATCH', `${hub.h}/health-checks/${first.json.id}`, { body: { intervalSeconds: 120 } })).status, 200);
  t.is((await hub.call('PATCH', `${hub.h}/health-checks/${first.json.id}`, { body: { enabled: false } })).status, 200);
  t.is((await hub.call('PATCH', `${hub.h}/health-checks/${disabled.json.id}`, { body: { enabled: true } })).status, 200);

  // each hub has its own quota
  const other = await stack.hub();
  t.is((await other.call('POST', `${other.h}/health-checks`, { body: check('theirs') })).status, 201);
});

async function environments(hub: HubFixture, n: number) {
  for (let i = 0; i < n; i++) {
    const r = await hub.call('POST', `${hub.h}/environments`, { body: { description: `env-${i}` } });
    if (r.status !== 201) throw new Error(r.text);
  }
}

test.serial('list offsets are bounded, and a page past the end costs no more than the first', async (t) => {
  const hub = await stack.hub();
  await environments(hub, 30);
  const statements: string[] = [];
  const record = (_options: unknown, query: { sql?: string }) => {
    if (query?.sql?.includes('"environments"')) statements.push(query.sql);
  };
  db().addHook('beforeQuery', 'count-statements', record as never);
  try {
    const first = await hub.call('GET', `${hub.h}/environments?size=10`);
    t.is(first.json.content.length, 10);
    const firstStatements = statements.splice(0);

    const beyond = await hub.call('GET', `${hub.h}/environments?page=10&size=10`);
    t.is(beyond.status, 200);
    t.deepEqual(beyond.json.content, []);
    t.is(beyond.json.totalElements, 30);
    t.true(statements.length <= firstStatements.length, 'no more statements than the first page');
    t.false(
      statements.some((s) => /OFFSET/i.test(s)),
      'no row is read and skipped past the end',
    );
    statements.splice(0);

    const tooDeep = await hub.call('GET', `${hub.h}/environments?page=101&size=1`);
    // the message names the limit
    assertRefused(t, tooDeep, 400, 'invalid_request', 'EH_LIST_TOO_DEEP', 'at most 100 rows deep');
    t.deepEqual(statements, [], 'refused before any query');
    t.is((await hub.call('GET', `${hub.h}/environments?page=100&size=1`)).status, 200, 'the limit itself is fine');
  } finally {
    db().removeHook('beforeQuery', 'count-statements');
  }
});
