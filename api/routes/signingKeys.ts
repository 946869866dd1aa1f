import { revokeNow, rotateNow } from '../../domain/commands/signingKeys.js';
import { principalName } from '../middleware/auth.js';
import { requestLog } from '../middleware/requestContext.js';
import type { Routes } from '../router.js';

export default function routes({ admin }: Routes) {
  admin.post('/admin/v1/signing-keys\\:rotate', async (ctx) => {
    ctx.body = await rotateNow(principalName(ctx));
  });
  // a compromised key: out of the JWKS and refused by every verifier at once (other web processes within seconds)
  admin.post('/admin/v1/signing-keys/:kid\\:revoke', async (ctx) => {
    ctx.body = await revokeNow(ctx.params.kid);
    requestLog(ctx).warn({ kid: ctx.params.kid, by: principalName(ctx) }, 'signing key revoked');
  });
}
