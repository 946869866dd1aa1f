import { z } from 'zod';
import { agentsOf } from '../../domain/commands/agents.js';
import {
  createEnvironment,
  deleteEnvironment,
  ENVIRONMENT_REACHES,
  getEnvironment,
  listEnvironments,
  updateEnvironment,
} from '../../domain/commands/environments.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentAgent } from '../presenters/agents.js';
import { presentEnvironment } from '../presenters/platform.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body } from '../validate.js';

const description = z.string().max(1000, 'must be at most 1000 characters');
const reach = z.enum(ENVIRONMENT_REACHES, { error: "must be 'agent' (only through the environment's agents) or 'edge' (the edge connects itself)" });

export const createSchema = z.object({ description: description.default(''), reach: reach.optional() });
export const updateSchema = z.object({ description: description.optional(), reach: reach.optional() });

export default function routes({ hub }: Routes) {
  hub.post('/environments', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentEnvironment(await createEnvironment(currentHub(ctx).id, input, principalName(ctx)));
  });
  hub.get('/environments', async (ctx) => {
    ctx.body = mapPage(await listEnvironments(currentHub(ctx).id, pageRequest(ctx, ['createdAt', 'description', 'envZId'])), presentEnvironment);
  });
  // one environment carries its agents and where they are connected
  hub.get('/environments/:envZId', async (ctx) => {
    const env = await getEnvironment(currentHub(ctx).id, ctx.params.envZId);
    ctx.body = { ...presentEnvironment(env), agents: (await agentsOf(env.hubId, env.envZId)).map(presentAgent) };
  });
  // reach back to 'edge' only by this explicit change (recorded as an execution)
  hub.patch('/environments/:envZId', async (ctx) => {
    const input = body(ctx, updateSchema);
    const env = await updateEnvironment(currentHub(ctx).id, ctx.params.envZId, input, principalName(ctx));
    ctx.body = { ...presentEnvironment(env), agents: (await agentsOf(env.hubId, env.envZId)).map(presentAgent) };
  });
  // only an environment that hosts nothing; its agents are revoked with it
  hub.delete('/environments/:envZId', async (ctx) => {
    await deleteEnvironment(currentHub(ctx).id, ctx.params.envZId, principalName(ctx));
    ctx.status = 204;
  });
}
