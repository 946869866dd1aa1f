import { z } from 'zod';
import { agentsOf } from '../../shared/commands/agents.js';
import { createEnvironment } from '../../shared/commands/platform.js';
import { Environment } from '../../shared/models/Environment.js';
import { principalName } from '../middleware/auth.js';
import { findPage, pageRequest } from '../paging.js';
import { presentAgent } from '../presenters/agents.js';
import { presentEnvironment } from '../presenters/platform.js';
import type { Routes } from '../router.js';
import { currentHub, findInHub, inHub } from '../scope.js';
import { body } from '../validate.js';

export const createSchema = z.object({ description: z.string().max(1000, 'must be at most 1000 characters').default('') });

export default function routes({ hub }: Routes) {
  hub.post('/environments', async (ctx) => {
    const input = body(ctx, createSchema);
    ctx.status = 201;
    ctx.body = presentEnvironment(await createEnvironment(currentHub(ctx).id, input.description, principalName(ctx)));
  });
  hub.get('/environments', async (ctx) => {
    ctx.body = await findPage(Environment, inHub(ctx), pageRequest(ctx, ['createdAt', 'description', 'envZId']), presentEnvironment);
  });
  // one environment carries its agents and where they are connected (CONTRACT.md "The agent", State)
  hub.get('/environments/:envZId', async (ctx) => {
    const env = await findInHub(ctx, Environment, ctx.params.envZId, 'environment');
    ctx.body = { ...presentEnvironment(env), agents: (await agentsOf(env.hubId, env.envZId)).map(presentAgent) };
  });
}
