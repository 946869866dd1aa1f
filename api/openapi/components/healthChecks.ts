/** Health checks and their results; the service's own health. */
import { z } from 'zod';
import { id, nullableTimestamp, obj } from './base.js';

export const HealthCheck = obj({
  id,
  hubId: id,
  name: z.string(),
  method: z.string(),
  path: z.string(),
  expectedStatus: z.number().int(),
  target: z.string().nullable(),
  timeoutMs: z.number().int(),
  intervalSeconds: z.number().int(),
  enabled: z.boolean(),
  lastResult: obj({
    result: z.string().nullable(),
    status: z.number().int().nullable(),
    latencyMs: z.number().nullable(),
    message: z.string().nullable(),
    executedAt: nullableTimestamp,
  }).nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'HealthCheck' });

export const HealthCheckResult = obj({
  healthCheckId: id.nullable(),
  result: z.enum(['SUCCESS', 'FAILURE', 'TIMEOUT', 'ERROR']),
  status: z.number().int().nullable(),
  latencyMs: z.number().nullable(),
  message: z.string().optional(),
  executedAt: nullableTimestamp,
  executionId: id.optional(),
}).meta({ id: 'HealthCheckResult' });

export const Health = z
  .union([obj({ status: z.literal('ok') }), obj({ status: z.literal('unavailable'), postgres: z.string(), redis: z.string() })])
  .meta({ id: 'Health' });
