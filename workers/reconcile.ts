import type { Job } from 'bullmq';
import { Op } from 'sequelize';
import { preparedQuery } from '../shared/db.js';
import { dispatch, type JobData } from '../domain/jobs/enqueue.js';
import { logger } from '../shared/logger.js';
import { Execution } from '../domain/models/Execution.js';
import { connectedQueue, queueOfType } from '../domain/jobs/queues.js';
import type { JobContext, ProcessorDefinition } from './processor.js';
import { finalizeFailure } from './runner.js';

interface ReconcileOutcome {
  /** QUEUED executions whose job Redis never took or lost: added again, with the options stored on the execution. */
  readded: number;
  /** Executions whose job failed for good (or vanished while running): FAILED, their failure handler run. */
  failed: number;
  /** Executions whose job completed but whose success was never written (PostgreSQL away at that moment). */
  succeeded: number;
}

/** A finished job is left to its worker this long before the clock settles its execution instead. */
const SETTLE_GRACE_MS = 5_000;
const BATCH = 500;
const MAX_BATCHES = 10;

const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

/**
 * The clock's repair of executions that their job can no longer finish (the outbox sweeper and the reconciliation in
 * one pass over executions still QUEUED or RUNNING after `olderThanMs`):
 * - no job, execution QUEUED: Redis never took it or lost it: add it again, exactly as it was first added;
 * - no job, execution RUNNING: lost mid-run: FAILED, and the resource's failure handler runs;
 * - job failed for good: the worker could not write that (PostgreSQL away at its last attempt): FAILED with the
 *   job's error, and the failure handler runs (a NEW tunnel, share or frontend becomes ERROR);
 * - job completed: SUCCEEDED with the job's result;
 * - job waiting, delayed or active: left alone.
 * `processors` give the failure handlers (every processor in workers/processors by default).
 */
export async function reconcileExecutions(processors: ProcessorDefinition[], olderThanMs = 10_000): Promise<ReconcileOutcome> {
  const byType = new Map(processors.map((p) => [p.type, p]));
  const outcome: ReconcileOutcome = { readded: 0, failed: 0, succeeded: 0 };
  let after: { createdAt: Date; id: string } | undefined;
  batches: for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const stale = await Execution.findAll({
      where: {
        status: { [Op.in]: ['QUEUED', 'RUNNING'] },
        createdAt: { [Op.lt]: new Date(Date.now() - olderThanMs) },
        ...(after && { [Op.or]: [{ createdAt: { [Op.gt]: after.createdAt } }, { createdAt: after.createdAt, id: { [Op.gt]: after.id } }] }),
      },
      order: [
        ['createdAt', 'ASC'],
        ['id', 'ASC'],
      ],
      limit: BATCH,
    });
    for (const execution of stale) {
      let job: Job<JobData> | undefined, state: string | undefined;
      try {
        job = await (await connectedQueue(queueOfType(execution.type))).getJob(execution.processId);
        state = job ? await job.getState() : undefined;
      } catch (err) {
        logger.warn({ err: errorMessage(err) }, 'reconciliation cannot reach Redis; trying again next tick');
        break batches;
      }
      try {
        if (!job) {
          if (execution.status === 'QUEUED') {
            if (await dispatch(execution)) outcome.readded++;
          } else if (await settleFailure(byType.get(execution.type), execution, undefined, new Error('its job was lost from Redis while it ran'))) {
            outcome.failed++;
          }
          continue;
        }
        if (Date.now() - (job.finishedOn ?? Date.now()) < SETTLE_GRACE_MS) continue;
        if (state === 'failed') {
          if (await settleFailure(byType.get(execution.type), execution, job, new Error(job.failedReason || 'the job failed'))) outcome.failed++;
        } else if (state === 'completed') {
          const [row] = await preparedQuery<{ id: string }>(
            'executions_reconcile_succeed',
            `UPDATE executions SET status = 'SUCCEEDED', result = $2, error = NULL, finished_at = to_timestamp($3 / 1000.0)
             WHERE id = $1 AND status IN ('QUEUED', 'RUNNING') RETURNING id`,
            [execution.id, JSON.stringify(job.returnvalue ?? {}), job.finishedOn],
          );
          if (row) outcome.succeeded++;
        }
      } catch (err) {
        logger.warn({ executionId: execution.id, err: errorMessage(err) }, 'execution not reconciled; trying again next tick');
      }
    }
    if (stale.length < BATCH) break;
    const last = stale[stale.length - 1];
    after = { createdAt: last.createdAt, id: last.id };
  }
  if (outcome.readded || outcome.failed || outcome.succeeded) logger.info({ ...outcome }, 'executions reconciled');
  return outcome;
}

async function settleFailure(def: ProcessorDefinition | undefined, execution: Execution, job: Job<JobData> | undefined, err: Error): Promise<boolean> {
  const log = logger.child({ executionId: execution.id, type: execution.type });
  const ctx: JobContext = {
    execution,
    job: job as Job<JobData>,
    hubId: execution.hubId,
    payload: execution.payload ?? {},
    attempt: job ? job.attemptsMade : execution.attempts,
    log,
  };
  const before = execution.status;
  if (def) await finalizeFailure(def, ctx, err);
  else
    await Execution.update(
      { status: 'FAILED', error: errorMessage(err), finishedAt: new Date() },
      { where: { id: execution.id, status: ['QUEUED', 'RUNNING'] } },
    );
  log.warn({ err: err.message, was: before }, 'execution finished as FAILED by reconciliation');
  return true;
}
