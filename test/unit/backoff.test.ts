import test from 'ava';
import { backoffMs } from '../../shared/backoff.js';

test('backoff doubles from the minimum and stops at the maximum', (t) => {
  const delays = [1, 2, 3, 4, 5, 6].map((attempt) => backoffMs(attempt, { minMs: 100, maxMs: 1000 }));
  t.deepEqual(delays, [100, 200, 400, 800, 1000, 1000]);
  t.is(backoffMs(0, { minMs: 100, maxMs: 1000 }), 100);
  t.is(backoffMs(200, { minMs: 100, maxMs: 1000 }), 1000);
});

test('jitter takes at most its share off, never adds', (t) => {
  for (let i = 0; i < 200; i++) {
    const d = backoffMs(4, { minMs: 100, maxMs: 10_000, jitter: 0.5 });
    t.true(d >= 400 && d <= 800, String(d));
  }
});
