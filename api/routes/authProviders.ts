import { z } from 'zod';
import {
  AUTH_PROVIDER_TYPES,
  createAuthProvider,
  deleteAuthProvider,
  findAuthProvider,
  listAuthProviders,
  updateAuthProvider,
} from '../../domain/commands/authProviders.js';
import { isHostname } from '../../domain/commands/customFrontends.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentAuthProvider } from '../presenters/authProviders.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body, fields } from '../validate.js';

const EMAIL_LOCAL = /^[A-Za-z0-9.!#$%&'+/=?^_`{|}~-]+$/;

/** `*@example.com` (anyone at the domain) or one exact address. */
function isEmailPattern(value: string): boolean {
  const at = value.lastIndexOf('@');
  if (at <= 0) return false;
  const local = value.slice(0, at);
  return (local === '*' || EMAIL_LOCAL.test(local)) && isHostname(value.slice(at + 1).toLowerCase());
}

const nonEmpty = z.string().trim().min(1, 'must not be empty').max(2000, 'must be at most 2000 characters');
const issuerUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.search && !u.hash;
  } catch {
    return false;
  }
}, 'must be an http(s) URL without query or fragment');
const scope = z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'must be an OAuth scope token (no spaces or quotes)');
const emailPatterns = z
  .array(z.string().refine(isEmailPattern, "must be '*@<domain>' such as '*@example.com', or an email address"))
  .max(100, 'must have at most 100 patterns');

const configSchema = z.strictObject({
  clientId: nonEmpty,
  clientSecret: nonEmpty,
  issuerUrl: issuerUrl.optional(),
  scopes: z.array(scope).max(50, 'must have at most 50 scopes').optional(),
});
export const createSchema = z.object({
  name: fields.name,
  type: z.enum(AUTH_PROVIDER_TYPES),
  config: configSchema,
  emailPatterns: emailPatterns.optional(),
});
export const patchSchema = z.strictObject({
  name: fields.name.optional(),
  type: z.enum(AUTH_PROVIDER_TYPES).optional(),
  config: z
    .strictObject({
      clientId: nonEmpty.optional(),
      clientSecret: nonEmpty.optional(),
      issuerUrl: issuerUrl.nullable().optional(),
      scopes: z.array(scope).max(50, 'must have at most 50 scopes').optional(),
    })
    .optional(),
  emailPatterns: emailPatterns.optional(),
});

const SORTABLE = ['createdAt', 'name', 'type'] as const;

export default function routes({ hub }: Routes) {
  hub.post('/auth-providers', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentAuthProvider(await createAuthProvider(currentHub(ctx).id, input, principalName(ctx)));
  });
  hub.get('/auth-providers', async (ctx) => {
    ctx.body = mapPage(await listAuthProviders(currentHub(ctx).id, pageRequest(ctx, SORTABLE)), presentAuthProvider);
  });
  hub.get('/auth-providers/:id', async (ctx) => {
    ctx.body = presentAuthProvider(await findAuthProvider(currentHub(ctx).id, ctx.params.id));
  });
  hub.patch('/auth-providers/:id', async (ctx) => {
    const input = body(ctx, patchSchema);
    ctx.body = presentAuthProvider(await updateAuthProvider(currentHub(ctx).id, ctx.params.id, input));
  });
  hub.delete('/auth-providers/:id', async (ctx) => {
    await deleteAuthProvider(currentHub(ctx).id, ctx.params.id);
    ctx.status = 204;
  });
}
