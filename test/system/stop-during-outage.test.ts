import { once } from 'node:events';
import test from 'ava';
import { ownRedis, type StoppableRedis } from '../helpers/outage.js';
import { spawnScript } from '../helpers/processes.js';
import { useStack } from '../helpers/stack.js';

/**
 * A process whose Redis is away when it stops closes every connection and exits by itself: nothing of BullMQ or
 * ioredis keeps reconnecting, or keeps a timer, after the stop returned. (ioredis leaves a connection that is
 * disconnected between two reconnection attempts 'reconnecting' for ever, and BullMQ waited for it to end: a worker
 * closed during an outage never finished closing, and the process never exited.)
 */

let redis: StoppableRedis;
test.before(async () => {
  redis = await ownRedis();
});
const stack = useStack(test, () => ({ workers: false, env: { REDIS_URL: redis.url } }));
test.after.always(async () => {
  await redis?.stop();
});

test.serial('workers and queues stopped while Redis is away: the process exits by itself', async (t) => {
  const child = spawnScript('test/helpers/scripts/workersStopOnSignal.ts', { DATABASE_URL: stack.databaseUrl, REDIS_URL: redis.url, LOG_LEVEL: 'warn' });
  try {
    await child.waitForLine(/^ready$/m, 'the workers up');
    await redis.stop();
    // every connection of the process has lost Redis and waits between two reconnection attempts
    await new Promise((r) => setTimeout(r, 1500));
    child.child.kill('SIGUSR2');
    await child.waitForLine(/^stopped$/m, 'the stop to return', 30_000);
    const exited = await Promise.race([once(child.child, 'exit').then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 20_000))]);
    t.true(exited, `the process is still alive 20 s after its stop returned\n${child.output().slice(-3000)}`);
  } finally {
    await child.kill();
    await redis.start();
  }
});
