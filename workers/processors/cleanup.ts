import { z } from 'zod';
import { REMOVE_HOSTING_JOB, removeHostingJob, UNPUBLISH_SHARE_JOB, unpublishShareJob } from '../../domain/commands/cleanup.js';
import { defineProcessor } from '../processor.js';

/** Provider clean-up enqueued by share and custom frontend deletes (retried with the default back-off). */
export default [
  defineProcessor({
    type: UNPUBLISH_SHARE_JOB,
    payload: z.object({ zId: z.string().min(1).max(200) }).strict(),
    handle: async ({ payload }) => unpublishShareJob(String(payload.zId)),
  }),
  defineProcessor({
    type: REMOVE_HOSTING_JOB,
    payload: z.object({ customFrontendId: z.string().min(1).max(200), hostname: z.string().min(1).max(253) }).strict(),
    handle: async ({ payload }) => removeHostingJob(String(payload.customFrontendId), String(payload.hostname)),
  }),
];
