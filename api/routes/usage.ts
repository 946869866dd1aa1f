import { ingestUsage } from '../../domain/commands/usage.js';
import type { Routes } from '../router.js';

/** Operator ingestion of usage samples: 202 {accepted}; a bad sample rejects the whole batch. */
export default function routes({ admin }: Routes) {
  admin.post('/admin/v1/usage', async (ctx) => {
    const result = await ingestUsage((ctx.request as { body?: unknown }).body ?? {});
    ctx.status = 202;
    ctx.body = result;
  });
}
