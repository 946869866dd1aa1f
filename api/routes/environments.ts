import { z } from 'zod';
import { agentsOf } from '../../shared/commands/agents.js';
import { createEnvironment, getEnvironment, listEnvironments } from '../../shared/commands/platform.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentAgent } from '../presenters/agents.js';
import { presentEnvironment } from '../presenters/platform.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body } from '../validate.js';

export const createSchema = z.object({ description: z.string().max(1000, 'must be at most 1000 characters').default('') });

export default function routes({ hub }: Routes) {
  hub.post('/environments', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentEnvironment(await createEnvironment(currentHub(ctx).id, input.description, principalName(ctx)));
  });
  hub.get('/environments', async (ctx) => {
    ctx.body = mapPage(await listEnvironments(currentHub(ctx).id, pageRequest(ctx, ['createdAt', 'description', 'envZId'])), presentEnvironment);
  });
  // one environment carries its agents and where they are connected
  hub.get('/environments/:envZId', async (ctx) => {
    const env = await getEnvironment(currentHub(ctx).id, ctx.params.envZId);
    ctx.body = { ...presentEnvironment(env), agents: (await agentsOf(env.hubId, env.envZId)).map(presentAgent) };
  });
}
