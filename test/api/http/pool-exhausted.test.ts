/**
 * A process's database pool held by slow statements (here: one hub's slow work, pg_sleep in a held transaction on
 * connections of the same pool) does not hold up the other hubs' requests for longer than HUB_DB_ACQUIRE_TIMEOUT_MS:
 * they are answered 503 `unavailable` with Retry-After, nothing written, and served again once a connection is free.
 */
import test from 'ava';
import { withConnection } from '../../../shared/db.js';
import { type HubFixture, useStack } from '../../helpers/stack.js';

const stack = useStack(test, { workers: false, env: { HUB_DB_POOL_MAX: '2', HUB_DB_ACQUIRE_TIMEOUT_MS: '300' } });
let slow: HubFixture;
let other: HubFixture;
let tokenId: string;

test.before(async () => {
  slow = await stack.hub({ name: 'slow' });
  other = await stack.hub({ name: 'other' });
  const token = await other.call('POST', `${other.h}/certificate-request-tokens`, { body: { name: 'kept' } });
  if (token.status !== 201) throw new Error(token.text);
  tokenId = token.json.id;
});

/** Holds every connection of the pool in a transaction sleeping until cancelled; resolves once all are held. */
async function holdThePool(): Promise<{ released: Promise<unknown>; settled: () => boolean }> {
  let held = 0;
  let done = false;
  const holders = Array.from({ length: 2 }, () =>
    withConnection(async (client) => {
      await client.query('BEGIN');
      held++;
      try {
        await client.query(`SELECT pg_sleep(60) /* ${slow.hubId} */`);
      } catch {
        /* cancelled */
      }
      await client.query('ROLLBACK');
    }),
  );
  const released = Promise.all(holders).finally(() => (done = true));
  while (held < 2) await new Promise((r) => setTimeout(r, 10));
  return { released, settled: () => done };
}

const cancelTheSleepers = () =>
  stack.sql.query(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(60)%' AND pid <> pg_backend_pid()`);

test.serial("another hub's read and create are answered 503 with Retry-After while the pool is held, not when it frees", async (t) => {
  const read = () => other.call('GET', `${other.h}/certificate-request-tokens/${tokenId}`);
  t.is((await read()).status, 200); // the key is known (cached) before the pool is taken
  const pool = await holdThePool();
  try {
    const r = await read();
    t.is(r.status, 503, r.text);
    t.is(r.json.error, 'unavailable');
    t.is(r.headers.get('retry-after'), '1');
    const created = await other.call('POST', `${other.h}/certificate-request-tokens`, { body: { name: 'during' } });
    t.is(created.status, 503, created.text);
    t.is(created.headers.get('retry-after'), '1');
    t.false(pool.settled(), 'answered while the slow statements still held the pool');
  } finally {
    await cancelTheSleepers();
    await pool.released;
  }
  t.is((await read()).status, 200);
  // nothing of the refused create was written: the name is free
  const again = await other.call('POST', `${other.h}/certificate-request-tokens`, { body: { name: 'during' } });
  t.is(again.status, 201, again.text);
});
