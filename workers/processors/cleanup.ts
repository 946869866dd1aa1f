import { REMOVE_HOSTING_JOB, removeHostingJob, UNPUBLISH_SHARE_JOB, unpublishShareJob } from '../../shared/commands/cleanup.js';
import { defineProcessor } from '../runner.js';

/** Provider clean-up enqueued by share and custom frontend deletes (retried with the default back-off). */
export default [
  defineProcessor({
    type: UNPUBLISH_SHARE_JOB,
    handle: async ({ payload }) => unpublishShareJob(String(payload.zId)),
  }),
  defineProcessor({
    type: REMOVE_HOSTING_JOB,
    handle: async ({ payload }) => removeHostingJob(String(payload.customFrontendId), String(payload.hostname)),
  }),
];
