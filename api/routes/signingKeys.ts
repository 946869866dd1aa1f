import { rotateNow } from '../../shared/commands/signingKeys.js';
import { principalName } from '../middleware/auth.js';
import type { Routes } from '../router.js';

export default function routes({ admin }: Routes) {
  admin.post('/admin/v1/signing-keys\\:rotate', async (ctx) => {
    ctx.body = await rotateNow(principalName(ctx));
  });
}
