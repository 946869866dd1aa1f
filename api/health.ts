/** Liveness of what every process depends on: PostgreSQL and Redis, each answering within a bound. */
import { db } from '../shared/db.js';
import { readyRedis } from '../shared/redis.js';
import { settleWithin } from '../shared/timeouts.js';

const within = <T>(ms: number, p: Promise<T>) => settleWithin(p, ms, () => new Error(`no answer within ${ms} ms`));

async function probe(check: () => Promise<unknown>): Promise<string> {
  try {
    await within(2000, check());
    return 'ok';
  } catch (err) {
    return `unavailable: ${(err as Error).message}`;
  }
}

/** `ok`, or `unavailable: <why>`, for each dependency. */
export async function dependencies(): Promise<{ postgres: string; redis: string }> {
  const [postgres, redis] = await Promise.all([probe(() => db().query('SELECT 1')), probe(async () => (await readyRedis()).ping())]);
  return { postgres, redis };
}
