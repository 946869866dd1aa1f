import { dependencies } from '../health.js';
import type { Routes } from '../router.js';

export default function routes({ open }: Routes) {
  open.get('/healthz', async (ctx) => {
    const { postgres, redis } = await dependencies();
    const ok = postgres === 'ok' && redis === 'ok';
    ctx.status = ok ? 200 : 503;
    ctx.body = ok ? { status: 'ok' } : { status: 'unavailable', postgres, redis };
  });
}
