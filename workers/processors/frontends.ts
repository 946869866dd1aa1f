import { z } from 'zod';
import {
  activateWhenDnsReady,
  DnsWaitEnded,
  failCustomFrontend,
  provisionHosting,
  RENEW_JOB,
  renewCertificate,
} from '../../domain/commands/customFrontendLifecycle.js';
import { ACTIVATE_JOB, PROVISION_JOB } from '../../domain/commands/customFrontends.js';
import { ENSURE_EDGE_CERTIFICATES_JOB, ensureEdgeCertificates } from '../../domain/commands/edgeCertificates.js';
import { defineProcessor, NO_PAYLOAD, permanentFailure } from '../processor.js';

/** A worker's first start issues the standard frontends' certificates the edge serves (idempotent, race-safe). */
export async function onWorkerStart(): Promise<void> {
  await ensureEdgeCertificates();
}

const customFrontendPayload = z.object({ customFrontendId: z.string().min(1).max(200) }).strict();

export default [
  // after its attempts are spent the frontend becomes ERROR with the reason, as tunnels and shares do
  defineProcessor({
    type: ENSURE_EDGE_CERTIFICATES_JOB,
    payload: NO_PAYLOAD,
    handle: async () => ensureEdgeCertificates(),
  }),
  defineProcessor({
    type: PROVISION_JOB,
    payload: customFrontendPayload,
    handle: async ({ payload }) => provisionHosting(String(payload.customFrontendId)),
    onFinalFailure: async ({ payload }, err) => {
      await failCustomFrontend(String(payload.customFrontendId), `the hosting infrastructure could not be created: ${err.message}`);
    },
  }),
  // fails (and is retried after HUB_DNS_CHECK_INTERVAL_MS) until the DNS records resolve as required or the DNS wait ends
  defineProcessor({
    type: ACTIVATE_JOB,
    payload: customFrontendPayload,
    handle: async ({ payload }) => {
      try {
        return await activateWhenDnsReady(String(payload.customFrontendId));
      } catch (err) {
        if (err instanceof DnsWaitEnded) throw permanentFailure(err.message);
        throw err;
      }
    },
    onFinalFailure: async ({ payload }, err) => {
      await failCustomFrontend(String(payload.customFrontendId), err.message);
    },
  }),
  // a failed renewal is not retried by BullMQ: the clock asks again once its back-off has passed
  defineProcessor({
    type: RENEW_JOB,
    payload: customFrontendPayload,
    handle: async ({ payload }) => {
      try {
        return await renewCertificate(String(payload.customFrontendId));
      } catch (err) {
        throw permanentFailure((err as Error).message);
      }
    },
  }),
];
