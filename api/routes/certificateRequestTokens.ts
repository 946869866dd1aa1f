import { z } from 'zod';
import {
  createToken,
  deleteToken,
  enrollmentJwt,
  findTokenByString,
  listTokens,
  readToken,
  updateToken,
} from '../../domain/commands/certificateRequestTokens.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentDeleted, presentEnrollmentJwt, presentToken } from '../presenters/pki.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body, fields } from '../validate.js';

const subjectField = z.string().max(64, 'must be at most 64 characters (the X.520 upper bound)').nullable();
const tokenFields = {
  name: fields.name,
  commonName: subjectField.optional(),
  organization: subjectField.optional(),
  organizationalUnit: subjectField.optional(),
  expiresAt: z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp' }).optional(),
  ttl: z.string().optional(),
  validYears: z.number().int().min(1).max(10).optional(),
  token: z.never({ message: 'the token string cannot be set or changed' }).optional(),
};
export const createSchema = z.object(tokenFields);
export const patchSchema = z.object({ ...tokenFields, name: fields.name.optional() });

const SORTABLE = ['createdAt', 'name', 'expiresAt', 'commonName', 'organization', 'organizationalUnit'];

export default function routes({ hub }: Routes) {
  hub.get('/certificate-request-tokens', async (ctx) => {
    ctx.body = mapPage(await listTokens(currentHub(ctx).id, pageRequest(ctx, SORTABLE)), presentToken);
  });
  hub.post('/certificate-request-tokens', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentToken(await createToken(currentHub(ctx).id, input, principalName(ctx)));
  });
  hub.get(['/certificate-request-tokens/by-token/:token', '/certificate-request-tokens/token/:token'], async (ctx) => {
    ctx.body = presentToken(await findTokenByString(currentHub(ctx).id, ctx.params.token));
  });
  hub.get('/certificate-request-tokens/:id', async (ctx) => {
    ctx.body = presentToken(await readToken(currentHub(ctx).id, ctx.params.id));
  });
  hub.patch('/certificate-request-tokens/:id', async (ctx) => {
    ctx.body = presentToken(await updateToken(currentHub(ctx).id, ctx.params.id, body(ctx, patchSchema), false));
  });
  hub.put('/certificate-request-tokens/:id', async (ctx) => {
    ctx.body = presentToken(await updateToken(currentHub(ctx).id, ctx.params.id, body(ctx, createSchema), true));
  });
  hub.delete('/certificate-request-tokens/:id', async (ctx) => {
    const token = await deleteToken(currentHub(ctx).id, ctx.params.id);
    ctx.body = presentDeleted(token, principalName(ctx));
  });
  hub.get('/certificate-request-tokens/:id/enrollment-jwt', async (ctx) => {
    ctx.body = presentEnrollmentJwt(await enrollmentJwt(currentHub(ctx).id, ctx.params.id));
  });
}
