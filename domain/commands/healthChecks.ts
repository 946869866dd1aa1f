import type { Transaction } from 'sequelize';
import { config } from '../../shared/config.js';
import { Op } from 'sequelize';
import { withTransaction } from '../../shared/db.js';
import { badRequest, notFound, refusal } from '../../shared/errors.js';
import { Hub } from '../models/Hub.js';
import { egressPolicy } from '../../shared/egress.js';
import { newId } from '../../shared/ids.js';
import { logger } from '../../shared/logger.js';
import { Execution } from '../models/Execution.js';
import { HealthCheck } from '../models/HealthCheck.js';
import { httpProber, type ProbeOutcome } from '../../shared/providers/httpProbe.js';
import { connectedQueue } from '../jobs/queues.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

export const SCHEDULED_RUN_JOB = 'health-checks.scheduledRun';
const EXECUTE_TYPE = 'health-checks.execute';
export const DEFAULT_TIMEOUT_MS = 5000;

interface HealthCheckFields {
  name: string;
  method: string;
  path: string;
  expectedStatus: number;
  target: string | null;
  timeoutMs: number;
  intervalSeconds: number;
  enabled: boolean;
}

export interface HealthCheckResult extends ProbeOutcome {
  healthCheckId: string;
  executedAt: Date;
}

/** Checks that run on a schedule must know what to probe, and not more often than the minimum interval. */
function scheduleRules(fields: Pick<HealthCheckFields, 'intervalSeconds' | 'target'>): void {
  const min = config().quotas.healthCheckMinIntervalSeconds;
  if (fields.intervalSeconds > 0 && fields.intervalSeconds < min) {
    throw refusal(
      'EH_CHECK_INTERVAL_TOO_SHORT',
      `value for property '$.intervalSeconds' must be 0 (manual runs only) or at least ${min} seconds (got ${fields.intervalSeconds})`,
    );
  }
  if (fields.intervalSeconds > 0 && !fields.target) throw badRequest("property '$.target' is required when intervalSeconds is above 0");
}

const isScheduled = (c: Pick<HealthCheckFields, 'enabled' | 'intervalSeconds' | 'target'>) => c.enabled && c.intervalSeconds > 0 && !!c.target;

/**
 * At most HUB_MAX_SCHEDULED_HEALTH_CHECKS scheduled checks per hub (429). The hub row is locked first, so two
 * concurrent requests cannot both take the last place.
 */
async function scheduledQuota(hubId: string, exceptId: string | null, transaction: Transaction): Promise<void> {
  const max = config().quotas.scheduledHealthChecksPerHub;
  await Hub.findByPk(hubId, { transaction, lock: transaction.LOCK.UPDATE, attributes: ['id'] });
  const scheduled = await HealthCheck.count({
    where: { hubId, enabled: true, intervalSeconds: { [Op.gt]: 0 }, target: { [Op.ne]: null }, ...(exceptId && { id: { [Op.ne]: exceptId } }) },
    transaction,
  });
  if (scheduled >= max) {
    throw refusal(
      'EH_QUOTA_SCHEDULED_CHECKS',
      `this hub already has ${scheduled} scheduled health checks, the most allowed (${max}); disable one or set its intervalSeconds to 0 first`,
    );
  }
}

export async function findHealthCheck(hubId: string, id: string): Promise<HealthCheck> {
  const check = await HealthCheck.findOne({ where: { hubId, id } });
  if (!check) throw notFound('health check', id);
  return check;
}

/** 403 for a target that is one of the service's own endpoints (its address, or what its name resolves to now). */
async function refuseOwnEndpoint(target: string | null | undefined): Promise<void> {
  if (!target) return;
  const url = new URL(target);
  const denied = await egressPolicy().ownEndpointRefusal(url.hostname, Number(url.port) || (url.protocol === 'https:' ? 443 : 80));
  if (denied) throw refusal('EH_TARGET_DENIED', `value for property '$.target': ${denied.message}`);
}

export async function createHealthCheck(hubId: string, fields: HealthCheckFields, createdBy: string): Promise<HealthCheck> {
  scheduleRules(fields);
  await refuseOwnEndpoint(fields.target);
  const check = await withTransaction(async (transaction) => {
    if (isScheduled(fields)) await scheduledQuota(hubId, null, transaction);
    return HealthCheck.create({ id: newId(), hubId, ...fields, createdBy }, { transaction });
  });
  await syncSchedule(check);
  return check;
}

/** PATCH and PUT: the given fields replace the stored ones; the schedule follows enabled and intervalSeconds. */
export async function updateHealthCheck(hubId: string, id: string, changes: Partial<HealthCheckFields>): Promise<HealthCheck> {
  await refuseOwnEndpoint(changes.target);
  const check = await withTransaction(async (transaction) => {
    const row = await HealthCheck.findOne({ where: { hubId, id }, transaction, lock: transaction.LOCK.UPDATE });
    if (!row) throw notFound('health check', id);
    const wasScheduled = isScheduled(row);
    row.set(changes);
    // an interval left as stored is not re-judged against a minimum raised since
    if (changes.intervalSeconds !== undefined || changes.target !== undefined) scheduleRules(row);
    if (!wasScheduled && isScheduled(row)) await scheduledQuota(hubId, id, transaction);
    row.changed('updatedAt', true);
    await row.save({ transaction });
    return row;
  });
  await syncSchedule(check);
  return check;
}

export async function deleteHealthCheck(hubId: string, id: string): Promise<void> {
  const check = await findHealthCheck(hubId, id);
  await check.destroy();
  await removeSchedule(id);
}

function probeUrl(target: string, path: string): string {
  return target.replace(/\/+$/, '') + path;
}

async function probe(healthCheckId: string, fields: HealthCheckFields): Promise<HealthCheckResult> {
  if (!fields.target) throw badRequest("health check has no target to probe; set property '$.target' (an http or https URL)");
  const outcome = await httpProber().probe({
    method: fields.method,
    url: probeUrl(fields.target, fields.path),
    timeoutMs: fields.timeoutMs,
    expectedStatus: fields.expectedStatus,
  });
  return { healthCheckId, ...outcome, executedAt: new Date() };
}

const fieldsOf = (c: HealthCheck): HealthCheckFields => ({
  name: c.name,
  method: c.method,
  path: c.path,
  expectedStatus: c.expectedStatus,
  target: c.target,
  timeoutMs: c.timeoutMs,
  intervalSeconds: c.intervalSeconds,
  enabled: c.enabled,
});

const resultRecord = (r: HealthCheckResult) => ({
  healthCheckId: r.healthCheckId,
  result: r.result,
  status: r.status,
  latencyMs: r.latencyMs,
  message: r.message,
  executedAt: r.executedAt.toISOString(),
});

/** Stores a run's outcome as the check's last result, unless a newer run already did. */
async function storeLastResult(result: HealthCheckResult): Promise<void> {
  const check = await HealthCheck.findByPk(result.healthCheckId);
  if (!check || (check.lastExecutedAt && check.lastExecutedAt > result.executedAt)) return;
  await HealthCheck.update(
    { lastResult: result.result, lastStatus: result.status, lastLatencyMs: result.latencyMs, lastMessage: result.message, lastExecutedAt: result.executedAt },
    { where: { id: result.healthCheckId }, silent: true },
  );
}

/** Runs the check now; stores the last result and records the run as a finished execution (the audit trail). */
export async function executeHealthCheck(hubId: string, id: string, executedBy: string): Promise<HealthCheckResult & { executionId: string }> {
  const check = await findHealthCheck(hubId, id);
  const startedAt = new Date();
  const result = await probe(check.id, fieldsOf(check));
  const executionId = newId();
  await storeLastResult(result);
  await Execution.create({
    id: executionId,
    processId: executionId,
    hubId,
    type: EXECUTE_TYPE,
    resourceType: 'healthCheck',
    resourceId: check.id,
    status: 'SUCCEEDED',
    payload: { healthCheckId: check.id },
    result: resultRecord(result),
    attempts: 1,
    createdBy: executedBy,
    startedAt,
    finishedAt: new Date(),
  });
  return { ...result, executionId };
}

/** A dry run of the stored check with `overrides` applied: nothing is saved. */
export async function testHealthCheck(hubId: string, id: string, overrides: Partial<HealthCheckFields>): Promise<HealthCheckResult> {
  const check = await findHealthCheck(hubId, id);
  await refuseOwnEndpoint(overrides.target);
  return probe(check.id, { ...fieldsOf(check), ...overrides });
}

/** Job (one per tick of the check's scheduler): probes and stores the last result; a stale scheduler removes itself. */
export async function runScheduledCheck(healthCheckId: string): Promise<Record<string, unknown>> {
  const check = await HealthCheck.findByPk(healthCheckId);
  if (!check || !isScheduled(check)) {
    await removeStaleSchedule(healthCheckId);
    return { skipped: check ? 'not scheduled' : 'deleted' };
  }
  const result = await probe(check.id, fieldsOf(check));
  await storeLastResult(result);
  return resultRecord(result);
}

const schedulerId = (healthCheckId: string) => `health-check:${healthCheckId}`;

/**
 * Removes a scheduler that a read of the database found stale, then reads again: an API change that committed and
 * upserted between that read and this removal would otherwise lose its fresh scheduler. Every API change syncs after
 * its commit, so the second read sees it whenever the removal could have undone it.
 */
async function removeStaleSchedule(healthCheckId: string): Promise<void> {
  await removeSchedule(healthCheckId);
  const now = await HealthCheck.findByPk(healthCheckId);
  if (now && isScheduled(now)) await syncSchedule(now);
}

/**
 * A BullMQ job scheduler per enabled check with intervalSeconds above 0 (upserted on every change, so a new
 * interval applies at once), removed otherwise. Each produced job is one execution (workers/runner.ts).
 * PostgreSQL stays the truth: a failed Redis call is logged and the clock's reconciliation repairs it.
 */
async function syncSchedule(check: HealthCheck): Promise<void> {
  try {
    if (!isScheduled(check)) {
      await removeSchedule(check.id);
      return;
    }
    await (await connectedQueue('health-checks')).upsertJobScheduler(
      schedulerId(check.id),
      { every: check.intervalSeconds * 1000 },
      {
        name: SCHEDULED_RUN_JOB,
        data: {
          hubId: check.hubId,
          payload: { healthCheckId: check.id },
          scheduled: { resourceType: 'healthCheck', resourceId: check.id, createdBy: 'scheduler' },
        },
        opts: { attempts: 1, removeOnComplete: { age: 3600, count: 1000 }, removeOnFail: { age: 86400 } },
      },
    );
  } catch (err) {
    logger.warn({ healthCheckId: check.id, err: (err as Error).message }, 'health check schedule not synced; reconciliation will retry');
  }
}

async function removeSchedule(healthCheckId: string): Promise<void> {
  try {
    await (await connectedQueue('health-checks')).removeJobScheduler(schedulerId(healthCheckId));
  } catch (err) {
    logger.warn({ healthCheckId, err: (err as Error).message }, 'health check schedule not removed; reconciliation will retry');
  }
}

/** Makes Redis's job schedulers match the database: one per scheduled check, none for anything else. */
export async function reconcileSchedules(): Promise<{ upserted: number; removed: number }> {
  // Redis first: a check created after this listing cannot have its fresh scheduler mistaken for a stale one
  const existing = await (await connectedQueue('health-checks')).getJobSchedulers(0, -1);
  const wanted = await HealthCheck.findAll({ where: { enabled: true }, attributes: ['id', 'hubId', 'enabled', 'intervalSeconds', 'target'] });
  const scheduled = wanted.filter((c) => c.intervalSeconds > 0 && c.target);
  const wantedIds = new Set(scheduled.map((c) => schedulerId(c.id)));
  let removed = 0;
  for (const s of existing) {
    const key = s.key ?? s.id;
    if (key?.startsWith('health-check:') && !wantedIds.has(key)) {
      await removeStaleSchedule(key.slice('health-check:'.length));
      removed++;
    }
  }
  const have = new Map(existing.map((s) => [s.key ?? s.id, s.every]));
  let upserted = 0;
  for (const check of scheduled) {
    if (Number(have.get(schedulerId(check.id))) === check.intervalSeconds * 1000) continue;
    await syncSchedule(check);
    upserted++;
  }
  return { upserted, removed };
}

/** One page of the hub's health checks. */
export const listHealthChecks = (hubId: string, req: PageRequest): Promise<Page<HealthCheck>> => findPage(HealthCheck, { hubId }, req);
