import {
  ACTIVATE_JOB,
  activateWhenDnsReady,
  PROVISION_JOB,
  provisionHosting,
  RENEW_JOB,
  renewCertificate,
} from '../../shared/commands/customFrontends.js';
import { ENSURE_EDGE_CERTIFICATES_JOB, ensureEdgeCertificates } from '../../shared/commands/edgeCertificates.js';
import { defineProcessor, permanentFailure } from '../runner.js';

/** A worker's first start issues the standard frontends' certificates the edge serves (idempotent, race-safe). */
export async function onWorkerStart(): Promise<void> {
  await ensureEdgeCertificates();
}

export default [
  defineProcessor({
    type: ENSURE_EDGE_CERTIFICATES_JOB,
    handle: async () => ensureEdgeCertificates(),
  }),
  defineProcessor({
    type: PROVISION_JOB,
    handle: async ({ payload }) => provisionHosting(String(payload.customFrontendId)),
  }),
  // fails (and is retried after HUB_DNS_CHECK_INTERVAL_MS) until the DNS records resolve as required
  defineProcessor({
    type: ACTIVATE_JOB,
    handle: async ({ payload }) => activateWhenDnsReady(String(payload.customFrontendId)),
  }),
  // a failed renewal is not retried by BullMQ: the clock asks again once its back-off has passed
  defineProcessor({
    type: RENEW_JOB,
    handle: async ({ payload }) => {
      try {
        return await renewCertificate(String(payload.customFrontendId));
      } catch (err) {
        throw permanentFailure((err as Error).message);
      }
    },
  }),
];
