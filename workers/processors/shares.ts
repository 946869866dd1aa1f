import { z } from 'zod';
import { failShareProvisioning, PROVISION_SHARE_JOB, provisionShare } from '../../domain/commands/shares.js';
import { defineProcessor } from '../processor.js';

export default defineProcessor({
  type: PROVISION_SHARE_JOB,
  payload: z.object({ zId: z.string().min(1).max(200) }).strict(),
  handle: async ({ payload }) => provisionShare(String(payload.zId)),
  onFinalFailure: async ({ payload }) => failShareProvisioning(String(payload.zId)),
});
