import { z } from 'zod';
import { findExecutionByProcessId, getExecution, listExecutions, type ExecutionFilters } from '../../domain/commands/executions.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentExecution } from '../presenters/platform.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { query, single } from '../validate.js';

export const findSchema = z.object({ processId: z.preprocess(single, z.string().min(1, 'must not be empty')) });
const SORTABLE = ['createdAt', 'startedAt', 'finishedAt', 'status', 'type'] as const;
const FILTERABLE = ['status', 'type', 'resourceType', 'resourceId'] as const;

/** Equality filters from the query string; a repeated parameter matches any of its values. */
function filters(q: Record<string, string | string[] | undefined>): ExecutionFilters {
  const where: ExecutionFilters = {};
  for (const f of FILTERABLE) if (q[f] !== undefined) where[f] = q[f]!;
  return where;
}

export default function routes({ hub }: Routes) {
  hub.get('/executions\\:find', async (ctx) => {
    const { processId } = query(ctx, findSchema);
    ctx.body = presentExecution(await findExecutionByProcessId(currentHub(ctx).id, processId));
  });
  hub.get('/executions/:id', async (ctx) => {
    ctx.body = presentExecution(await getExecution(currentHub(ctx).id, ctx.params.id));
  });
  hub.get('/executions', async (ctx) => {
    ctx.body = mapPage(await listExecutions(currentHub(ctx).id, filters(ctx.query), pageRequest(ctx, SORTABLE)), presentExecution);
  });
}
