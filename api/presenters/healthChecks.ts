import type { HealthCheckResult } from '../../domain/commands/healthChecks.js';
import type { HealthCheck } from '../../domain/models/HealthCheck.js';
import { iso } from './platform.js';

export const presentHealthCheck = (c: HealthCheck) => ({
  id: c.id,
  hubId: c.hubId,
  name: c.name,
  method: c.method,
  path: c.path,
  expectedStatus: c.expectedStatus,
  target: c.target,
  timeoutMs: c.timeoutMs,
  intervalSeconds: c.intervalSeconds,
  enabled: c.enabled,
  lastResult: c.lastExecutedAt
    ? { result: c.lastResult, status: c.lastStatus, latencyMs: c.lastLatencyMs, message: c.lastMessage, executedAt: iso(c.lastExecutedAt) }
    : null,
  createdAt: iso(c.createdAt),
  createdBy: c.createdBy,
  updatedAt: iso(c.updatedAt),
});

export const presentHealthCheckResult = (r: HealthCheckResult & { executionId?: string }) => ({
  healthCheckId: r.healthCheckId,
  result: r.result,
  status: r.status,
  latencyMs: r.latencyMs,
  ...(r.message ? { message: r.message } : {}),
  executedAt: iso(r.executedAt),
  ...(r.executionId ? { executionId: r.executionId } : {}),
});
