import { z } from 'zod';
import {
  createHealthCheck,
  DEFAULT_TIMEOUT_MS,
  deleteHealthCheck,
  executeHealthCheck,
  findHealthCheck,
  listHealthChecks,
  testHealthCheck,
  updateHealthCheck,
} from '../../domain/commands/healthChecks.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentHealthCheck, presentHealthCheckResult } from '../presenters/healthChecks.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body, fields } from '../validate.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

const method = z
  .string()
  .transform((m) => m.toUpperCase())
  .pipe(z.enum(METHODS));
const path = z
  .string()
  .max(2000, 'must be at most 2000 characters')
  .regex(/^\/[^\s#]*$/, "must start with '/' and contain no spaces or fragment");
const expectedStatus = z.number().int().min(100).max(599);
/** Only http and https backends are probed. */
const target = z
  .string()
  .max(2000, 'must be at most 2000 characters')
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '' && !u.search && !u.hash && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an absolute http or https URL without credentials, query or fragment');
const timeoutMs = z.number().int().min(1).max(60_000);
const intervalSeconds = z.number().int().min(0).max(86_400);

export const createSchema = z.object({
  name: fields.name,
  method,
  path,
  expectedStatus,
  target: target.nullable().default(null),
  timeoutMs: timeoutMs.default(DEFAULT_TIMEOUT_MS),
  intervalSeconds: intervalSeconds.default(0),
  enabled: z.boolean().default(true),
});
export const patchSchema = z.strictObject({
  name: fields.name.optional(),
  method: method.optional(),
  path: path.optional(),
  expectedStatus: expectedStatus.optional(),
  target: target.nullable().optional(),
  timeoutMs: timeoutMs.optional(),
  intervalSeconds: intervalSeconds.optional(),
  enabled: z.boolean().optional(),
});
/** PUT: name, method, path, expectedStatus and enabled are required; target, timeoutMs and intervalSeconds keep their values when omitted. */
export const putSchema = patchSchema.required({ name: true, method: true, path: true, expectedStatus: true, enabled: true });

const SORTABLE = ['createdAt', 'name', 'enabled', 'lastExecutedAt'] as const;

export default function routes({ hub }: Routes) {
  hub.post('/health-checks', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentHealthCheck(await createHealthCheck(currentHub(ctx).id, input, principalName(ctx)));
  });
  hub.get('/health-checks', async (ctx) => {
    ctx.body = mapPage(await listHealthChecks(currentHub(ctx).id, pageRequest(ctx, SORTABLE)), presentHealthCheck);
  });
  hub.get('/health-checks/:id', async (ctx) => {
    ctx.body = presentHealthCheck(await findHealthCheck(currentHub(ctx).id, ctx.params.id));
  });
  hub.patch('/health-checks/:id', async (ctx) => {
    ctx.body = presentHealthCheck(await updateHealthCheck(currentHub(ctx).id, ctx.params.id, body(ctx, patchSchema)));
  });
  hub.put('/health-checks/:id', async (ctx) => {
    ctx.body = presentHealthCheck(await updateHealthCheck(currentHub(ctx).id, ctx.params.id, body(ctx, putSchema)));
  });
  hub.delete('/health-checks/:id', async (ctx) => {
    await deleteHealthCheck(currentHub(ctx).id, ctx.params.id);
    ctx.status = 204;
  });
  hub.post(['/health-checks/:id\\:execute', '/health-checks/:id/execute'], async (ctx) => {
    ctx.body = presentHealthCheckResult(await executeHealthCheck(currentHub(ctx).id, ctx.params.id, principalName(ctx)));
  });
  hub.post(['/health-checks/:id\\:test', '/health-checks/:id/test'], async (ctx) => {
    const overrides = body(ctx, patchSchema);
    ctx.body = presentHealthCheckResult(await testHealthCheck(currentHub(ctx).id, ctx.params.id, overrides));
  });
}
