import type { JobsOptions } from 'bullmq';
import { Op, type Transaction } from 'sequelize';
import { config } from '../../shared/config.js';
import { preparedQuery } from '../../shared/db.js';
import { newId } from '../../shared/ids.js';
import { logger } from '../../shared/logger.js';
import { Execution } from '../models/Execution.js';
import { connectedQueue, QUEUE_READY_TIMEOUT_MS, queueOfType } from './queues.js';
import { settleWithin } from '../../shared/timeouts.js';

interface EnqueueSpec {
  /** `<queue>.<name>`, e.g. `ipsec.provisionTunnel`. */
  type: string;
  hubId: string | null;
  resourceType?: string;
  resourceId?: string;
  payload?: Record<string, unknown>;
  createdBy: string;
  /** Write the execution row in this transaction; the job is added only after it commits. */
  transaction?: Transaction;
  /** Overrides of the default attempts/backoff. */
  jobOptions?: Pick<JobsOptions, 'attempts' | 'backoff' | 'delay' | 'priority'>;
  /** The execution's id (and its job's), when the caller needs it before the job is added: a fresh one otherwise. */
  id?: string;
  /** The channel the worker publishes the job's end on (jobs/jobEnds.ts): the job's data only, not the execution's. */
  replyTo?: string;
}

export interface JobData {
  executionId: string;
  hubId: string | null;
  payload: Record<string, unknown>;
  /** Who asked (the execution's `createdBy`), for a job that claims its execution in its own statement and checks it there. */
  createdBy?: string;
  /** Where the worker publishes the job's end for the web process waiting for it (jobs/jobEnds.ts). */
  replyTo?: string;
}

/** Five attempts, the first retry after HUB_JOB_BACKOFF_MS (1 s), doubling. */
const defaultJobOptions = (): JobsOptions => ({
  attempts: 5,
  backoff: { type: 'exponential', delay: config().jobBackoffMs },
  removeOnComplete: { age: 3600, count: 5000 },
  removeOnFail: { age: 7 * 86400 },
});

/**
 * Records an execution (status QUEUED) and adds its BullMQ job with job id = execution id, so a second dispatch of
 * the same execution (a retry, the sweeper) cannot run the work twice.
 *
 * Outbox semantics: the row is the truth. When the job cannot be added (Redis away), the row stays QUEUED and the
 * clock's sweeper adds it later; the caller's request still succeeds.
 */
export async function enqueue(spec: EnqueueSpec): Promise<Execution> {
  const { execution } = await record(spec);
  return execution();
}

/** What a job is dispatched from: the stored execution's id, type, data and options. */
type Dispatchable = Pick<Execution, 'id' | 'processId' | 'type' | 'hubId' | 'payload' | 'jobOptions' | 'createdBy'>;

/**
 * enqueue() for a caller that needs only the execution's id (an issuance that waits for its job): the same row and
 * job, without building the model.
 */
export async function enqueueJob(spec: EnqueueSpec): Promise<string> {
  return (await record(spec)).id;
}

async function record(spec: EnqueueSpec): Promise<{ id: string; execution: () => Execution }> {
  queueOfType(spec.type); // fail on an unknown queue before writing anything
  const id = spec.id ?? newId();
  const fields = {
    id,
    processId: id,
    hubId: spec.hubId,
    type: spec.type,
    resourceType: spec.resourceType ?? null,
    resourceId: spec.resourceId ?? null,
    status: 'QUEUED' as const,
    payload: spec.payload ?? {},
    // kept with the execution so that a re-added job (the sweeper) runs with exactly these options
    jobOptions: spec.jobOptions && Object.keys(spec.jobOptions).length ? { ...spec.jobOptions } : null,
    createdBy: spec.createdBy,
  };
  if (spec.transaction) {
    const created = await Execution.create(fields, { transaction: spec.transaction });
    spec.transaction.afterCommit(() => dispatch(created).then(() => undefined));
    return { id, execution: () => created };
  }
  // the common path, once per job: a prepared statement instead of the model's generic insert
  const [row] = await preparedQuery<{ created_at: Date }>(
    'executions_insert',
    `INSERT INTO executions (id, process_id, hub_id, type, resource_type, resource_id, status, payload, created_by, job_options)
     VALUES ($1, $1, $2, $3, $4, $5, 'QUEUED', $6, $7, $8) RETURNING created_at`,
    [
      id,
      fields.hubId,
      fields.type,
      fields.resourceType,
      fields.resourceId,
      JSON.stringify(fields.payload),
      fields.createdBy,
      fields.jobOptions && JSON.stringify(fields.jobOptions),
    ],
  );
  await dispatch(fields, {}, spec.replyTo);
  return { id, execution: () => Execution.build({ ...fields, createdAt: row.created_at, attempts: 0, error: null, result: null }, { isNewRecord: false }) };
}

/**
 * Adds the job of an execution with the options stored on it (`options` only where none are stored). Never throws:
 * returns false when Redis did not take it (the sweeper retries).
 */
export async function dispatch(execution: Dispatchable, options: EnqueueSpec['jobOptions'] = {}, replyTo?: string): Promise<boolean> {
  const stored = (execution.jobOptions ?? undefined) as EnqueueSpec['jobOptions'] | undefined;
  const data: JobData = { executionId: execution.id, hubId: execution.hubId, payload: execution.payload, createdBy: execution.createdBy };
  if (replyTo !== undefined) data.replyTo = replyTo;
  const deadline = Date.now() + QUEUE_READY_TIMEOUT_MS;
  try {
    const q = await connectedQueue(queueOfType(execution.type), QUEUE_READY_TIMEOUT_MS);
    const added = q.add(execution.type, data, { ...defaultJobOptions(), ...(stored ?? options), jobId: execution.processId });
    await settleWithin(added, deadline - Date.now(), () => new Error('timed out adding the job'));
    return true;
  } catch (err) {
    logger.warn({ executionId: execution.id, type: execution.type, err: (err as Error).message }, 'job not dispatched; the sweeper will retry');
    return false;
  }
}

/**
 * Re-adds the jobs of executions still QUEUED or RUNNING after `olderThanMs` whose job Redis no longer has
 * (never added, or lost), with their stored options. Adding with the same job id is a no-op while the job exists.
 * The clock runs the fuller pass, workers/reconcile.ts (which also settles executions whose job failed or completed
 * while PostgreSQL was away); this one needs no processor definitions.
 */
export async function sweepExecutions(olderThanMs = 10_000, limit = 500): Promise<number> {
  const stale = await Execution.findAll({
    where: { status: { [Op.in]: ['QUEUED', 'RUNNING'] }, createdAt: { [Op.lt]: new Date(Date.now() - olderThanMs) } },
    order: [['createdAt', 'ASC']],
    limit,
  });
  let readded = 0;
  for (const execution of stale) {
    let job;
    try {
      job = await (await connectedQueue(queueOfType(execution.type))).getJob(execution.processId);
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'sweeper cannot reach Redis; trying again next tick');
      break;
    }
    if (job) continue;
    if (await dispatch(execution)) readded++;
  }
  if (readded) logger.info({ readded }, 'sweeper re-added jobs');
  return readded;
}

/** Who starts the executions that no person asked for (roll-ups, scheduled health checks, renewals). */
const MACHINE_PRINCIPALS = ['clock', 'scheduler'];

/**
 * Deletes finished executions that the clock or a job scheduler started, once older than `retainMs`: a roll-up
 * every minute and a scheduled probe per check would otherwise grow the table without bound. Executions a person or
 * key caused are the audit trail and are kept. Deletes in batches so no statement holds many locks.
 */
export async function pruneMachineExecutions(retainMs: number, batch = 5000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const rows = await preparedQuery<{ id: string }>(
      'executions_prune_machine',
      `DELETE FROM executions WHERE id IN (
         SELECT id FROM executions
         WHERE created_by = ANY($1::text[]) AND status IN ('SUCCEEDED', 'FAILED') AND finished_at < now() - make_interval(secs => $2)
         LIMIT $3)
       RETURNING id`,
      [MACHINE_PRINCIPALS, retainMs / 1000, batch],
    );
    deleted += rows.length;
    if (rows.length < batch) return deleted;
  }
}
