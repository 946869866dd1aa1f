/** Executions: the asynchronous operations and their outcome. */
import { z } from 'zod';
import { id, nullableTimestamp, obj } from './base.js';

export const Execution = obj({
  id,
  processId: z.string(),
  hubId: id.nullable(),
  type: z.string(),
  resourceType: z.string().nullable(),
  resourceId: z.string().nullable(),
  status: z.enum(['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED']),
  attempts: z.number().int(),
  error: z.string().nullable(),
  result: z.record(z.string(), z.unknown()).nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  startedAt: nullableTimestamp,
  finishedAt: nullableTimestamp,
}).meta({ id: 'Execution' });
