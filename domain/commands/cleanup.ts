import type { Transaction } from 'sequelize';
import { enqueue } from '../jobs/enqueue.js';
import { frontendHosting } from '../../shared/providers/frontendHosting.js';

/**
 * Provider clean-up after a delete, as jobs: the delete enqueues its clean-up in the same transaction (the execution
 * row is written with the delete; the job is added after commit, and the sweeper adds it if Redis was away), so a
 * provider that is slow or down neither fails nor slows the request, and a failed clean-up is retried and shows as an
 * execution. Deleting the row is what unpublishes for the edge, which reads routes from the database.
 */
export const UNPUBLISH_SHARE_JOB = 'shares.unpublishShare';
export const REMOVE_HOSTING_JOB = 'frontends.removeHosting';

export const enqueueShareCleanup = (hubId: string, zId: string, createdBy: string, transaction: Transaction) =>
  enqueue({ type: UNPUBLISH_SHARE_JOB, hubId, resourceType: 'share', resourceId: zId, payload: { zId }, createdBy, transaction });

export const enqueueHostingCleanup = (hubId: string, customFrontendId: string, hostname: string, createdBy: string, transaction: Transaction) =>
  enqueue({
    type: REMOVE_HOSTING_JOB,
    hubId,
    resourceType: 'customFrontend',
    resourceId: customFrontendId,
    payload: { customFrontendId, hostname },
    createdBy,
    transaction,
  });

/** Job: the hosting provider forgets the share (idempotent). */
export async function unpublishShareJob(zId: string): Promise<Record<string, unknown>> {
  await frontendHosting().unpublishShare({ zId });
  return { unpublished: zId };
}

/** Job: the hosting provider removes what served the custom frontend (idempotent). */
export async function removeHostingJob(customFrontendId: string, hostname: string): Promise<Record<string, unknown>> {
  await frontendHosting().remove({ customFrontendId, hostname });
  return { removed: hostname };
}
