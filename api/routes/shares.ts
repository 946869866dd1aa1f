import { z } from 'zod';
import { createShare, deleteShare, findShare, listShares, shareView, updateShare } from '../../domain/commands/shares.js';
import { durationMs } from '../../shared/durations.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentShare } from '../presenters/shares.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body, fields } from '../validate.js';
import { policySchema } from '../policySchema.js';

const targetUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'tcp:') && u.hostname !== '';
  } catch {
    return false;
  }
}, 'must be an absolute http or https URL (tcp://HOST:PORT for a TCP share)');

export const createSchema = z.object({
  name: fields.name,
  frontendIds: z.array(z.string().min(1, 'must not be empty')).min(1, 'must name at least one frontend').max(20, 'must name at most 20 frontends'),
  target: targetUrl,
  protocol: z.enum(['http', 'tcp'], "must be 'http' (the default) or 'tcp'").optional(),
  envZId: z.string().min(1, 'must not be empty').optional(),
  authProviderId: z.string().min(1, 'must not be empty').nullable().optional(),
  mutualTls: z.boolean().optional(),
  inspect: z.boolean().optional(),
  affinity: z.enum(['none', 'client-ip', 'cookie'], "must be 'none' (the default), 'client-ip' or 'cookie'").optional(),
  targetProtocol: z.enum(['http1', 'h2'], "must be 'http1' (HTTP/1.1, the default) or 'h2' (HTTP/2 to the target, as gRPC needs)").optional(),
  oauthEmailDomains: z
    .array(z.string().regex(/^(?!-)[A-Za-z0-9-]{1,63}(\.(?!-)[A-Za-z0-9-]{1,63})+$/, 'must be a DNS domain such as example.com'))
    .max(50, 'must name at most 50 domains')
    .nullable()
    .optional(),
  oauthAuthorizationCheckInterval: z
    .string()
    .refine((v) => {
      const ms = durationMs(v);
      return ms !== undefined && ms >= 60_000 && ms <= 30 * 86_400_000;
    }, 'must be an ISO 8601 duration from PT1M to P30D, such as PT3H')
    .nullable()
    .optional(),
  tcpIdleTimeout: z
    .string()
    .refine((v) => {
      const ms = durationMs(v);
      return ms !== undefined && ms >= 1000 && ms <= 86_400_000;
    }, 'must be an ISO 8601 duration from PT1S to P1D, such as PT10M')
    .nullable()
    .optional(),
  /** The share's traffic policy (api/policySchema.ts); null: none. */
  policy: policySchema.nullable().optional(),
});

/** What can change on a share: its access rules, inspection, agent affinity, a TCP share's idle timeout and its policy (unknown properties are refused by name). */
export const updateSchema = createSchema.pick({
  mutualTls: true,
  inspect: true,
  affinity: true,
  authProviderId: true,
  oauthEmailDomains: true,
  oauthAuthorizationCheckInterval: true,
  tcpIdleTimeout: true,
  policy: true,
});

const SORTABLE = ['createdAt', 'name', 'status', 'zId'] as const;

export default function routes({ hub }: Routes) {
  hub.post('/shares', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentShare(await createShare(currentHub(ctx).id, input, principalName(ctx)));
  });
  hub.get('/shares', async (ctx) => {
    ctx.body = mapPage(await listShares(currentHub(ctx).id, pageRequest(ctx, SORTABLE)), presentShare);
  });
  hub.get('/shares/:zId', async (ctx) => {
    ctx.body = presentShare(await shareView(await findShare(currentHub(ctx).id, ctx.params.zId)));
  });
  hub.patch('/shares/:zId', async (ctx) => {
    const input = body(ctx, updateSchema);
    ctx.body = presentShare(await updateShare(currentHub(ctx).id, ctx.params.zId, input));
  });
  hub.delete('/shares/:zId', async (ctx) => {
    await deleteShare(currentHub(ctx).id, ctx.params.zId, principalName(ctx));
    ctx.status = 204;
  });
}
