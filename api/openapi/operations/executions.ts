/** Executions. */
import { z } from 'zod';
import * as executions from '../../routes/executions.js';
import * as c from '../components.js';
import type { Operation } from '../operation.js';

const executionFilters = z.object({
  status: z.string().optional(),
  type: z.string().optional(),
  resourceType: z.string().optional(),
  resourceId: z.string().optional(),
});

export const executionOperations: Operation[] = [
  {
    method: 'get',
    path: '/executions\\:find',
    scope: 'hub',
    tag: 'Executions',
    summary: 'Find an execution by processId',
    query: executions.findSchema,
    responses: { 200: c.Execution },
  },
  { method: 'get', path: '/executions/:id', scope: 'hub', tag: 'Executions', summary: 'Get an execution', responses: { 200: c.Execution } },
  {
    method: 'get',
    path: '/executions',
    scope: 'hub',
    tag: 'Executions',
    summary: 'List executions (the job monitor and audit trail)',
    paged: true,
    query: executionFilters,
    responses: { 200: c.page(c.Execution, 'Execution') },
  },
];
