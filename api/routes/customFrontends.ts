import { z } from 'zod';
import {
  createCustomFrontend,
  deleteCustomFrontend,
  dnsRecords,
  getCustomFrontend,
  listCustomFrontends,
  updateCustomFrontend,
} from '../../domain/commands/customFrontends.js';
import { principalName } from '../middleware/auth.js';
import { presentCustomFrontend, presentDnsRecords } from '../presenters/customFrontends.js';
import type { Routes } from '../router.js';
import { mapPage, pageRequest } from '../paging.js';
import { currentHub } from '../scope.js';
import { body } from '../validate.js';

const authProviderIds = z.array(z.string().min(1, 'must not be empty')).max(20, 'must name at most 20 auth providers');
export const createSchema = z.object({
  hostname: z.string().trim().min(1, 'must not be empty').max(253, 'must be at most 253 characters'),
  authProviderIds: authProviderIds.default([]),
});
/** authProviderIds is the only updatable field of a custom frontend; anything else is refused by name. */
export const patchSchema = z.strictObject({ authProviderIds });

export default function routes({ hub }: Routes) {
  hub.post('/custom-frontends', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentCustomFrontend(await createCustomFrontend(currentHub(ctx).id, input, principalName(ctx)));
  });
  // beyond the documented operations: a paged list, so that a hub can find its custom frontends again
  hub.get('/custom-frontends', async (ctx) => {
    ctx.body = mapPage(await listCustomFrontends(currentHub(ctx).id, pageRequest(ctx, ['createdAt', 'hostname', 'status'])), presentCustomFrontend);
  });
  hub.get('/custom-frontends/:id', async (ctx) => {
    ctx.body = presentCustomFrontend(await getCustomFrontend(currentHub(ctx).id, ctx.params.id));
  });
  hub.get('/custom-frontends/:id/dns-records', async (ctx) => {
    ctx.body = presentDnsRecords(await dnsRecords(currentHub(ctx).id, ctx.params.id));
  });
  hub.patch('/custom-frontends/:id', async (ctx) => {
    const input = body(ctx, patchSchema);
    ctx.body = presentCustomFrontend(await updateCustomFrontend(currentHub(ctx).id, ctx.params.id, input, principalName(ctx)));
  });
  hub.delete('/custom-frontends/:id', async (ctx) => {
    await deleteCustomFrontend(currentHub(ctx).id, ctx.params.id, principalName(ctx));
    ctx.status = 204;
  });
}
