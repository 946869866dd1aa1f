import { ACTIVATE_JOB, activateWhenDnsReady, PROVISION_JOB, provisionHosting } from '../../shared/commands/customFrontends.js';
import { defineProcessor } from '../runner.js';

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
];
