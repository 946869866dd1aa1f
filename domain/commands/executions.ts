/**
 * Executions: the job monitor and audit trail of a hub. Reads for the API, and the state changes the job runner
 * makes: QUEUED -> RUNNING -> SUCCEEDED | FAILED, or back to QUEUED while a retry waits (a run whose own statement
 * claims its execution goes QUEUED -> SUCCEEDED). The runner's two statements per job are prepared (they run for
 * every job); the rest go through the model.
 */
import { col, fn } from 'sequelize';
import { preparedQuery } from '../../shared/db.js';
import { notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { Execution } from '../models/Execution.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

/** What a list of executions may be narrowed by: equality, or any of several values. */
export type ExecutionFilters = Partial<Record<'status' | 'type' | 'resourceType' | 'resourceId', string | string[]>>;

export const listExecutions = (hubId: string, filters: ExecutionFilters, req: PageRequest): Promise<Page<Execution>> =>
  findPage(Execution, { ...filters, hubId }, req);

export async function getExecution(hubId: string, id: string): Promise<Execution> {
  const execution = await Execution.findOne({ where: { id, hubId } });
  if (!execution) throw notFound('execution', id);
  return execution;
}

export async function findExecutionByProcessId(hubId: string, processId: string): Promise<Execution> {
  const execution = await Execution.findOne({ where: { processId, hubId } });
  if (!execution) throw notFound(`execution with processId '${processId}'`);
  return execution;
}

/** Every column under its model attribute name, from the model itself, for RETURNING into Execution.build. */
let returning: string | undefined;
const returningColumns = () =>
  (returning ??= Object.entries(Execution.getAttributes())
    .map(([attribute, definition]) => `${definition.field ?? attribute} AS "${attribute}"`)
    .join(', '));

/** Marks an execution RUNNING for this attempt, if it is of this type and not finished: the row, else undefined. */
export async function startExecution(id: string, attempt: number, type: string): Promise<Execution | undefined> {
  const [row] = await preparedQuery<Record<string, unknown>>(
    'executions_start',
    `UPDATE executions SET status = 'RUNNING', attempts = $2, started_at = COALESCE(started_at, now())
     WHERE id = $1 AND type = $3 AND status IN ('QUEUED', 'RUNNING') RETURNING ${returningColumns()}`,
    [id, attempt, type],
  );
  return row ? Execution.build(row as never, { isNewRecord: false, raw: true }) : undefined;
}

export const executionById = (id: string): Promise<Execution | null> => Execution.findByPk(id);

export async function executionSucceeded(id: string, result: Record<string, unknown>): Promise<void> {
  await preparedQuery(
    'executions_succeed',
    `UPDATE executions SET status = 'SUCCEEDED', result = $2, error = NULL, finished_at = now() WHERE id = $1 AND status = 'RUNNING'`,
    [id, JSON.stringify(result)],
  );
}

/** The attempts column raised to `attempt` (never lowered: a stalled job's settlement counts the attempts made). */
const attemptsAtLeast = (attempt: number | undefined) => (attempt ? { attempts: fn('GREATEST', col('attempts'), attempt) as unknown as number } : {});

/**
 * Back to QUEUED with the attempt's error, while a retry waits (a run that claims its execution in its own statement
 * leaves it QUEUED until then: its attempt is counted here).
 */
export async function executionRequeued(id: string, error: string, attempt?: number): Promise<void> {
  await Execution.update({ status: 'QUEUED', error, ...attemptsAtLeast(attempt) }, { where: { id, status: ['QUEUED', 'RUNNING'] } });
}

export async function executionFailed(id: string, error: string, attempt?: number): Promise<void> {
  await Execution.update({ status: 'FAILED', error, finishedAt: new Date(), ...attemptsAtLeast(attempt) }, { where: { id, status: ['QUEUED', 'RUNNING'] } });
}

/** A run of a scheduled job (a BullMQ job scheduler's), recorded as its own execution when it first starts. */
export async function recordScheduledExecution(run: {
  id: string;
  hubId: string | null;
  type: string;
  resourceType?: string;
  resourceId?: string;
  payload: Record<string, unknown>;
  createdBy: string;
}): Promise<void> {
  await Execution.findOrCreate({
    where: { id: run.id },
    defaults: {
      id: run.id,
      processId: run.id,
      hubId: run.hubId,
      type: run.type,
      resourceType: run.resourceType ?? null,
      resourceId: run.resourceId ?? null,
      status: 'QUEUED',
      payload: run.payload,
      createdBy: run.createdBy,
    },
  });
}

/**
 * A refused job leaves a FAILED execution with the reason, under the job's id, and touches nothing else: no hub, no
 * payload of its own making is stored, and an execution that already has this id (the real one) is left alone.
 */
export async function recordRefusedJob(jobId: string, type: string, reason: string): Promise<void> {
  await preparedQuery(
    'executions_refused',
    `INSERT INTO executions (id, process_id, hub_id, type, status, payload, error, attempts, created_by, started_at, finished_at)
     VALUES ($1, $2, NULL, $3, 'FAILED', '{}', $4, 1, 'queue', now(), now()) ON CONFLICT DO NOTHING`,
    [newId(), jobId.slice(0, 200), type.slice(0, 200), reason],
  );
}
