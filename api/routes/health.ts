import { db } from '../../shared/db.js';
import { readyRedis } from '../../shared/redis.js';
import type { Routes } from '../router.js';

const within = <T>(ms: number, p: Promise<T>) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);

async function probe(check: () => Promise<unknown>): Promise<string> {
  try {
    await within(2000, check());
    return 'ok';
  } catch (err) {
    return `unavailable: ${(err as Error).message}`;
  }
}

export default function routes({ open }: Routes) {
  open.get('/healthz', async (ctx) => {
    const [postgres, redisState] = await Promise.all([probe(() => db().query('SELECT 1')), probe(async () => (await readyRedis()).ping())]);
    const ok = postgres === 'ok' && redisState === 'ok';
    ctx.status = ok ? 200 : 503;
    ctx.body = ok ? { status: 'ok' } : { status: 'unavailable', postgres, redis: redisState };
  });
}
