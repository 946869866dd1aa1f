import { z } from 'zod';
import { ApiError } from '../../shared/errors.js';
import { Execution } from '../../shared/models/Execution.js';
import { findPage, pageRequest } from '../paging.js';
import { presentExecution } from '../presenters/platform.js';
import type { Routes } from '../router.js';
import { findInHub, inHub } from '../scope.js';
import { query, single } from '../validate.js';

export const findSchema = z.object({ processId: z.preprocess(single, z.string().min(1, 'must not be empty')) });
const SORTABLE = ['createdAt', 'startedAt', 'finishedAt', 'status', 'type'] as const;
const FILTERABLE = ['status', 'type', 'resourceType', 'resourceId'] as const;

/** Equality filters from the query string; a repeated parameter matches any of its values. */
function filters(q: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const where: Record<string, string | string[]> = {};
  for (const f of FILTERABLE) if (q[f] !== undefined) where[f] = q[f]!;
  return where;
}

export default function routes({ hub }: Routes) {
  hub.get('/executions\\:find', async (ctx) => {
    const { processId } = query(ctx, findSchema);
    const execution = await Execution.findOne({ where: inHub(ctx, { processId }) });
    if (!execution) throw new ApiError(404, 'not_found', `no execution with processId '${processId}'`);
    ctx.body = presentExecution(execution);
  });
  hub.get('/executions/:id', async (ctx) => {
    ctx.body = presentExecution(await findInHub(ctx, Execution, ctx.params.id, 'execution'));
  });
  hub.get('/executions', async (ctx) => {
    ctx.body = await findPage(Execution, inHub(ctx, filters(ctx.query)), pageRequest(ctx, SORTABLE), presentExecution);
  });
}
