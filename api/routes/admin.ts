import { z } from 'zod';
import {
  apiKeysOf,
  createApiKey,
  createHub,
  createStandardFrontend,
  deleteHub,
  getHub,
  listHubs,
  revokeApiKey,
  updateHub,
} from '../../domain/commands/platform.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentApiKey, presentFrontend, presentHub } from '../presenters/platform.js';
import { enqueueEdgeCertificates } from '../../domain/commands/edgeCertificates.js';
import { forgetHub, forgetKey } from '../middleware/authCache.js';
import type { Routes } from '../router.js';
import { body, fields } from '../validate.js';

const features = z.strictObject({ ipsec: z.boolean().optional() });
/** A hub's own quotas: a whole number (0 refuses every new one), or null for the service's default. */
const quota = (max: number) => z.number().int().min(0).max(max).nullable().optional();
const quotas = z.strictObject({ shares: quota(1_000_000), tcpPorts: quota(65_535) });
export const createHubSchema = z.object({ name: fields.name, features: features.optional(), quotas: quotas.optional() });
export const updateHubSchema = z.object({ name: fields.name.optional(), features: features.optional(), quotas: quotas.optional() });
export const createKeySchema = z.object({ name: fields.name });
const urlTemplate = z
  .string()
  .refine((s) => s.includes('{token}'), 'must contain the placeholder {token}')
  .refine((s) => {
    try {
      const u = new URL(s.replace('{token}', 'token'));
      return u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an http(s) URL template');
export const createFrontendSchema = z.object({ publicName: fields.name, urlTemplate });

/** The operator API (hubs, API keys, standard frontends), behind the admin token. */
export default function routes({ admin }: Routes) {
  admin.post('/admin/v1/hubs', async (ctx) => {
    ctx.status = 201;
    ctx.body = presentHub(await createHub(body(ctx, createHubSchema)));
  });
  admin.get('/admin/v1/hubs', async (ctx) => {
    ctx.body = mapPage(await listHubs(pageRequest(ctx, ['createdAt', 'name', 'id'])), presentHub);
  });
  admin.delete('/admin/v1/hubs/:hubId', async (ctx) => {
    await deleteHub(ctx.params.hubId);
    forgetHub(ctx.params.hubId); // this process at once; the others on the change notification (authCache.ts)
    ctx.status = 204;
  });
  admin.get('/admin/v1/hubs/:hubId/api-keys', async (ctx) => {
    ctx.body = (await apiKeysOf(ctx.params.hubId)).map((k) => presentApiKey(k));
  });
  admin.get('/admin/v1/hubs/:hubId', async (ctx) => {
    ctx.body = presentHub(await getHub(ctx.params.hubId));
  });
  admin.patch('/admin/v1/hubs/:hubId', async (ctx) => {
    const hub = await updateHub(ctx.params.hubId, body(ctx, updateHubSchema));
    forgetHub(hub.id); // this process at once; the others on the change notification (authCache.ts)
    ctx.body = presentHub(hub);
  });
  admin.post('/admin/v1/hubs/:hubId/api-keys', async (ctx) => {
    const { key, token } = await createApiKey(ctx.params.hubId, body(ctx, createKeySchema).name);
    ctx.status = 201;
    ctx.body = presentApiKey(key, token);
  });
  admin.delete('/admin/v1/hubs/:hubId/api-keys/:id', async (ctx) => {
    const key = await revokeApiKey(ctx.params.hubId, ctx.params.id);
    forgetKey(key.tokenHash.toString('hex')); // this process at once; the others on the change notification (authCache.ts)
    ctx.body = presentApiKey(key);
  });
  admin.post('/admin/v1/frontends', async (ctx) => {
    ctx.status = 201;
    const frontend = await createStandardFrontend(body(ctx, createFrontendSchema));
    await enqueueEdgeCertificates('admin');
    ctx.body = presentFrontend(frontend);
  });
}
