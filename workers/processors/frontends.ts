import {
  ACTIVATE_JOB,
  activateWhenDnsReady,
  PROVISION_JOB,
  provisionHosting,
  RENEW_JOB,
  renewCertificate,
} from '../../shared/commands/customFrontends.js';
import { defineProcessor, permanentFailure } from '../runner.js';

export default [
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
