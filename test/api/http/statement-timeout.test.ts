/**
 * A statement that outlives HUB_DB_STATEMENT_TIMEOUT_MS (here: it waits for a row that another session holds locked,
 * as a long maintenance transaction would) is cancelled by PostgreSQL. The request is answered 503 `unavailable`
 * with Retry-After, not 500; nothing was changed, and once the lock is gone the same request succeeds.
 */
import test from 'ava';
import pg from 'pg';
import { assertRefused } from '../../helpers/refusals.js';
import { useStack } from '../../helpers/stack.js';

const stack = useStack(test, { workers: false, env: { HUB_DB_STATEMENT_TIMEOUT_MS: '300' } });

test('a statement cancelled by the statement timeout is a 503 with Retry-After; nothing changed; then it succeeds', async (t) => {
  const hub = await stack.hub();
  const token = await hub.call('POST', `${hub.h}/certificate-request-tokens`, { body: { name: 'locked' } });
  t.is(token.status, 201, token.text);
  const holder = new pg.Client({ connectionString: stack.databaseUrl });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM certificate_request_tokens WHERE id = $1 FOR UPDATE', [token.json.id]);
    const started = Date.now();
    const refused = await hub.call('DELETE', `${hub.h}/certificate-request-tokens/${token.json.id}`);
    assertRefused(t, refused, 503, 'unavailable', 'EH_UNAVAILABLE');
    t.is(refused.headers.get('retry-after'), '1');
    t.true(Date.now() - started < 5000, 'answered once the statement was cancelled');
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }
  t.is((await hub.call('GET', `${hub.h}/certificate-request-tokens/${token.json.id}`)).status, 200, 'nothing was deleted');
  t.is((await hub.call('DELETE', `${hub.h}/certificate-request-tokens/${token.json.id}`)).status, 200);
  t.is((await hub.call('GET', `${hub.h}/certificate-request-tokens/${token.json.id}`)).status, 404);
});
