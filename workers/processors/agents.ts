import { z } from 'zod';
import { DomainError } from '../../shared/errors.js';
import { ENROLL_AGENT_JOB, issueAgentCertificate, type EnrollAgentPayload } from '../../domain/commands/agents.js';
import { encodeRefusal } from '../../domain/commands/pkiJobs.js';
import { RENEW_AGENT_JOB, renewAgentCertificate, type RenewAgentPayload } from '../../domain/commands/agentRenewal.js';
import { defineProcessor, permanentFailure } from '../processor.js';

/** An agent's enrollment: the hub's CA signs its CSR and the enrollment is spent with the agent stored (one statement). */
const enrollment = defineProcessor({
  type: ENROLL_AGENT_JOB,
  payload: z.object({ enrollmentId: z.string().min(1).max(200), agentId: z.string().min(1).max(200), csr: z.string().min(1).max(65536) }).strict(),
  concurrency: 16,
  async handle(ctx) {
    try {
      return await issueAgentCertificate(ctx.hubId as string, ctx.payload as unknown as EnrollAgentPayload, ctx.execution.createdBy);
    } catch (err) {
      // a refusal (spent, expired) is final; the waiting request answers it
      if (err instanceof DomainError) throw permanentFailure(encodeRefusal(err));
      throw err;
    }
  },
});

/** An agent's renewal: the hub's CA signs its new key, which replaces the certificate the agent proved it holds. */
const renewal = defineProcessor({
  type: RENEW_AGENT_JOB,
  payload: z
    .object({ agentId: z.string().min(1).max(200), csr: z.string().min(1).max(65536), fingerprint: z.string().regex(/^[0-9a-fA-F:]{64,95}$/) })
    .strict(),
  concurrency: 16,
  async handle(ctx) {
    try {
      return await renewAgentCertificate(ctx.hubId as string, ctx.payload as unknown as RenewAgentPayload);
    } catch (err) {
      // a refusal (revoked, renewed meanwhile) is final; the waiting request answers it
      if (err instanceof DomainError) throw permanentFailure(encodeRefusal(err));
      throw err;
    }
  },
});

export default [enrollment, renewal];
