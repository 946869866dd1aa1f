/**
 * Two clocks (two processes, or two hosts whose clocks differ by 300 ms) fire every schedule: each tick of a
 * schedule must run once. The tick's lock is keyed by schedule and scheduled second and is not released when the
 * run ends, so the clock that fires 300 ms later finds the tick taken.
 */
import test from 'ava';
import { readyRedis } from '../../shared/redis.js';
import { runExclusive } from '../../workers/clock.js';
import { useStack } from '../helpers/stack.js';

useStack(test, { workers: false });

test('a tick runs once across two clocks 300 ms apart, whichever fires first; the next tick runs again', async (t) => {
  const runs: string[] = [];
  const tick = new Date('2026-11-25T03:00:00.000Z');
  // clock A fires on its own time at the scheduled second (node-cron's context.date); its run is quick and over
  t.true(await runExclusive('twice', tick, 60_000, async () => void runs.push('A')));
  // clock B's host is 300 ms ahead or behind: it fires for the same tick after A's run has ended
  t.false(await runExclusive('twice', new Date(tick.getTime() + 300), 60_000, async () => void runs.push('B+300')));
  t.false(await runExclusive('twice', new Date(tick.getTime() - 300), 60_000, async () => void runs.push('B-300')));
  t.deepEqual(runs, ['A']);
  // the next minute's tick is a new one
  t.true(await runExclusive('twice', new Date(tick.getTime() + 60_000 + 300), 60_000, async () => void runs.push('B next')));
  t.deepEqual(runs, ['A', 'B next']);
  // the lock expires by itself
  const redis = await readyRedis();
  const keys = await redis.keys('*clock:twice:*');
  t.is(keys.length, 2);
  for (const key of keys) t.true((await redis.pttl(key)) > 0);
});

test('concurrent clocks racing for one tick: exactly one runs', async (t) => {
  let ran = 0;
  const tick = new Date('2026-11-25T04:00:00.000Z');
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) => runExclusive('race', new Date(tick.getTime() + (i % 2 ? 300 : -300)), 60_000, async () => void ran++)),
  );
  t.is(results.filter(Boolean).length, 1);
  t.is(ran, 1);
});
