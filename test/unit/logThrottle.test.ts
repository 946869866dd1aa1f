import test from 'ava';
import { logThrottle } from '../../shared/logThrottle.js';

test('a repeated problem is said once per interval and key, with how often it repeated meanwhile', async (t) => {
  const said: string[] = [];
  const throttle = logThrottle(40);
  for (let i = 0; i < 5; i++) throttle('a', (repeated) => said.push(`a ${repeated}`));
  throttle('b', (repeated) => said.push(`b ${repeated}`));
  t.deepEqual(said, ['a 0', 'b 0']);
  await new Promise((resolve) => setTimeout(resolve, 60));
  throttle('a', (repeated) => said.push(`a ${repeated}`));
  t.deepEqual(said, ['a 0', 'b 0', 'a 4']);
});

test('keys are bounded: the oldest is forgotten, and said again at once', (t) => {
  const said: string[] = [];
  const throttle = logThrottle(60_000, 2);
  for (const key of ['x', 'y', 'z', 'x']) throttle(key, () => said.push(key));
  t.deepEqual(said, ['x', 'y', 'z', 'x']);
  throttle('z', () => said.push('z again'));
  t.deepEqual(said, ['x', 'y', 'z', 'x'], 'z is still remembered');
});
