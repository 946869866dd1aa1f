import { enqueueDueRenewals } from '../../domain/commands/customFrontendLifecycle.js';
import { enqueueEdgeCertificates } from '../../domain/commands/edgeCertificates.js';
import { logger } from '../../shared/logger.js';
import { defineSchedule } from '../schedule.js';
import { config } from '../../shared/config.js';

/** Renews custom frontend certificates before they expire (HUB_CERTIFICATE_RENEW_BEFORE_DAYS). */
export const customFrontendRenewal = defineSchedule({
  name: 'custom-frontend-certificate-renewal',
  cron: config().certificateRenewalCron,
  run: async () => {
    const enqueued = await enqueueDueRenewals();
    if (enqueued) logger.info({ enqueued }, 'custom frontend certificate renewals enqueued');
  },
});

/** Daily: the standard frontends' edge certificates, renewed when due (the job changes nothing otherwise). */
const edgeCertificateRenewal = defineSchedule({
  name: 'edge-certificate-renewal',
  cron: '0 23 3 * * *',
  run: async () => {
    await enqueueEdgeCertificates('clock');
  },
});

export default [customFrontendRenewal, edgeCertificateRenewal];
