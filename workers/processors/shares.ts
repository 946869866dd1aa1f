import { failShareProvisioning, PROVISION_SHARE_JOB, provisionShare } from '../../shared/commands/shares.js';
import { defineProcessor } from '../runner.js';

export default defineProcessor({
  type: PROVISION_SHARE_JOB,
  handle: async ({ payload }) => provisionShare(String(payload.zId)),
  onFinalFailure: async ({ payload }) => failShareProvisioning(String(payload.zId)),
});
