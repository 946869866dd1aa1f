import { z } from 'zod';
import { DomainError } from '../../shared/errors.js';
import { ENROLL_AGENT_JOB, issueAgentCertificate, type EnrollAgentPayload } from '../../shared/commands/agents.js';
import { encodeRefusal } from '../../shared/commands/pkiJobs.js';
import { defineProcessor, permanentFailure } from '../processor.js';

/** An agent's enrollment: the hub's CA signs its CSR and the enrollment is spent with the agent stored (one statement). */
export default defineProcessor({
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
