import { z } from 'zod';
import { agentsOf, createAgentEnrollment, enrollAgent, revokeAgent } from '../../domain/commands/agents.js';
import { getEnvironment } from '../../domain/commands/environments.js';
import { renewAgent } from '../../domain/commands/agentRenewal.js';
import { principalName } from '../middleware/auth.js';
import { presentAgent, presentAgentEnrollment, presentAgentIdentity } from '../presenters/agents.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body } from '../validate.js';

export const agentEnrollmentSchema = z.object({ ttl: z.string().min(1, 'must not be empty').optional() });
export const agentEnrollSchema = z.object({ jwt: z.string().min(1, 'must not be empty'), csr: z.string().min(1, 'must not be empty') });
export const agentRenewSchema = z.object({ csr: z.string().min(1, 'must not be empty'), proof: z.string().min(1, 'must not be empty').max(4096) });

/** Agents of an environment: enrollment, the list with their connections, revocation. */
export default function routes({ hub, open, account }: Routes) {
  // the API key's hub: what `edgehub share` needs to find it from EDGEHUB_URL and EDGEHUB_API_KEY alone
  account.get('/account', (ctx) => {
    const { id, name } = currentHub(ctx);
    ctx.body = { hubId: id, name };
  });
  hub.post('/environments/:envZId/agent-enrollment', async (ctx) => {
    const input = body(ctx, agentEnrollmentSchema);
    ctx.status = 201;
    ctx.body = presentAgentEnrollment(await createAgentEnrollment(currentHub(ctx).id, ctx.params.envZId, input, principalName(ctx)));
  });
  hub.get('/environments/:envZId/agents', async (ctx) => {
    const env = await getEnvironment(currentHub(ctx).id, ctx.params.envZId);
    ctx.body = (await agentsOf(env.hubId, env.envZId)).map(presentAgent);
  });
  hub.delete('/environments/:envZId/agents/:id', async (ctx) => {
    await revokeAgent(currentHub(ctx).id, ctx.params.envZId, ctx.params.id, principalName(ctx));
    ctx.status = 204;
  });
  // unauthenticated: the one-time JWT in the body is the credential
  open.post(['/hub/v2/:hubId/agents/enroll', '/hub/:hubId/agents/enroll'], async (ctx) => {
    const input = body(ctx, agentEnrollSchema);
    ctx.status = 201;
    ctx.body = presentAgentIdentity(await enrollAgent(ctx.params.hubId, input));
  });
  // unauthenticated: a proof signed by the agent's current key is the credential
  open.post(['/hub/v2/:hubId/agents/:agentId/renew', '/hub/:hubId/agents/:agentId/renew'], async (ctx) => {
    const input = body(ctx, agentRenewSchema);
    ctx.body = presentAgentIdentity(await renewAgent(ctx.params.hubId, ctx.params.agentId, input));
  });
}
