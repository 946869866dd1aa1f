import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { z, type ZodType } from 'zod';
import { config } from '../shared/config.js';
import { preparedQuery } from '../shared/db.js';
import { newId } from '../shared/ids.js';
import { StillWaiting } from '../shared/errors.js';
import type { JobData } from '../shared/jobs.js';
import { logger, type Logger } from '../shared/logger.js';
import { Execution } from '../shared/models/Execution.js';
import { closeWithConnection, queueOfType, type QueueName } from '../shared/queues.js';
import { createRedis } from '../shared/redis.js';
import { jobsTotal, observeJob } from '../shared/telemetry.js';

export interface JobContext {
  execution: Execution;
  job: Job<JobData>;
  hubId: string | null;
  payload: Record<string, unknown>;
  /** 1 for the first run. */
  attempt: number;
  log: Logger;
  /**
   * Extra fields for the job's return value only (what a waiting web process receives), beside the result stored on
   * the execution: e.g. the row a job wrote, so that its waiter need not read it back.
   */
  reply?: Record<string, unknown>;
  /**
   * Set by a handler whose last statement also marked this execution SUCCEEDED with the result it returns (see
   * `succeededSql`): one statement (and one commit) instead of two; the runner then writes nothing more.
   */
  succeeded?: boolean;
}

export { succeededSql } from '../shared/jobs.js';

export interface ProcessorDefinition {
  /** `<queue>.<name>`; the queue comes from the prefix. */
  type: string;
  /**
   * The shape of the job's payload (a strict object): a job whose data does not match is refused before anything
   * runs, so that no way of adding a job (a forged one included) runs this processor with made-up data.
   */
  payload: ZodType;
  /** Jobs of this type come from a BullMQ job scheduler: they carry no execution id (see ScheduledJobData). */
  scheduled?: boolean;
  /**
   * Does the work; its result is stored on the execution and shown by the executions API, so it must never hold a
   * secret. Throw to retry; throw `permanentFailure(...)` to stop.
   */
  handle(ctx: JobContext): Promise<Record<string, unknown> | void>;
  /** Called once when the execution fails for good (e.g. move the resource to ERROR). */
  onFinalFailure?(ctx: JobContext, error: Error): Promise<void>;
  /** Jobs of this queue run at most this many at once per worker process (the queue takes the largest). */
  concurrency?: number;
}

export const defineProcessor = (d: ProcessorDefinition): ProcessorDefinition => d;

/** An empty payload: the job needs nothing but its type. */
export const NO_PAYLOAD = z.object({}).strict();

const id = z.string().min(1).max(200);
const scheduledSchema = z.object({ resourceType: id.optional(), resourceId: id.optional(), createdBy: id }).strict();

/** The whole of a job's data for this processor: what `dispatch` (or the job scheduler) writes, and nothing else. */
function jobDataSchema(def: ProcessorDefinition): ZodType {
  const ofExecution = z.object({ executionId: id, hubId: id.nullable(), payload: def.payload }).strict();
  // a scheduled run that the sweeper re-adds carries its execution's id like any other job
  return def.scheduled ? z.union([z.object({ hubId: id.nullable(), payload: def.payload, scheduled: scheduledSchema }).strict(), ofExecution]) : ofExecution;
}

/** Why a job's data does not match its processor's schema (paths and messages), or undefined when it does. */
export function jobDataRefusal(def: ProcessorDefinition, data: unknown): string | undefined {
  const parsed = (jobDataSchemas.get(def) ?? jobDataSchemas.set(def, jobDataSchema(def)).get(def)!).safeParse(data);
  if (parsed.success) return undefined;
  const issues = parsed.error.issues.slice(0, 5).map((i) => `${['$', ...i.path].join('.')}: ${i.message}`);
  return `job data refused: it does not match the schema of '${def.type}' (${issues.join('; ')})`.slice(0, 2000);
}
const jobDataSchemas = new WeakMap<ProcessorDefinition, ZodType>();

/**
 * A refused job leaves a FAILED execution with the reason, under the job's id, and touches nothing else: no hub, no
 * payload of its own making is stored, and an execution that already has this id (the real one) is left alone.
 */
async function recordRefusal(job: Job, message: string): Promise<void> {
  await preparedQuery(
    'executions_refused',
    `INSERT INTO executions (id, process_id, hub_id, type, status, payload, error, attempts, created_by, started_at, finished_at)
     VALUES ($1, $2, NULL, $3, 'FAILED', '{}', $4, 1, 'queue', now(), now()) ON CONFLICT DO NOTHING`,
    [newId(), String(job.id).slice(0, 200), job.name.slice(0, 200), message],
  );
}

/** Refuses (and records) a job of no known type or whose data does not match its processor's schema: the reason. */
async function refused(def: ProcessorDefinition | undefined, job: Job): Promise<string | undefined> {
  const refusal = def ? jobDataRefusal(def, job.data) : `no processor for job type '${job.name.slice(0, 200)}'`;
  if (!refusal) return undefined;
  logger.warn({ type: job.name, jobId: job.id, refusal }, 'job refused');
  await recordRefusal(job, refusal).catch((err) => logger.error({ err: errorMessage(err) }, 'could not record a refused job'));
  return refusal;
}

/** A failure that retrying cannot fix: the execution becomes FAILED at once with this message. */
export const permanentFailure = (message: string) => new UnrecoverableError(message);

const processorsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'processors');

function processorModules(): Promise<{ default?: ProcessorDefinition | ProcessorDefinition[]; onWorkerStart?: () => Promise<void> }[]> {
  const files = readdirSync(processorsDir).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort();
  return Promise.all(files.map((f) => import(pathToFileURL(path.join(processorsDir, f)).href)));
}

/** Every processor in workers/processors (default export: one definition or an array). */
export async function loadProcessors(): Promise<ProcessorDefinition[]> {
  const modules = await processorModules();
  return modules.flatMap((m) => (m.default === undefined ? [] : Array.isArray(m.default) ? m.default : [m.default]));
}

/** Runs each processor module's `onWorkerStart` (set-up a worker needs before its first job, e.g. the root CA). */
export async function runWorkerStartHooks(): Promise<void> {
  for (const m of await processorModules()) await m.onWorkerStart?.();
}

/** The executions columns under their model attribute names, for RETURNING into Execution.build. */
const EXECUTION_COLUMNS = Object.entries({
  id: 'id',
  processId: 'process_id',
  hubId: 'hub_id',
  type: 'type',
  resourceType: 'resource_type',
  resourceId: 'resource_id',
  status: 'status',
  payload: 'payload',
  result: 'result',
  error: 'error',
  attempts: 'attempts',
  createdBy: 'created_by',
  createdAt: 'created_at',
  startedAt: 'started_at',
  finishedAt: 'finished_at',
})
  .map(([attribute, column]) => `${column} AS "${attribute}"`)
  .join(', ');

const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

/**
 * Runs one job as its execution: QUEUED -> RUNNING -> SUCCEEDED | FAILED (or back to QUEUED with the error while
 * a retry waits). A job whose execution is already finished or gone does nothing, so a duplicate cannot redo work.
 */
export async function runExecution(def: ProcessorDefinition, job: Job<JobData>): Promise<unknown> {
  const executionId = job.data.executionId ?? (await recordScheduledRun(job as unknown as Job<ScheduledJobData>));
  const attempt = job.attemptsMade + 1;
  const [row] = await preparedQuery<Record<string, unknown>>(
    'executions_start',
    `UPDATE executions SET status = 'RUNNING', attempts = $2, started_at = COALESCE(started_at, now())
     WHERE id = $1 AND type = $3 AND status IN ('QUEUED', 'RUNNING') RETURNING ${EXECUTION_COLUMNS}`,
    [executionId, attempt, def.type],
  );
  if (!row) {
    const existing = await Execution.findByPk(executionId);
    if (existing && existing.type !== def.type) {
      const refusal = `job refused: its execution ${executionId} is a '${existing.type}', not a '${def.type}'`;
      logger.warn({ type: def.type, jobId: job.id, refusal }, 'job refused');
      throw new UnrecoverableError(refusal);
    }
    logger.info({ executionId, status: existing?.status ?? 'missing' }, 'job skipped: execution already finished or gone');
    return { skipped: existing?.status ?? 'missing' };
  }
  const execution = Execution.build(row as never, { isNewRecord: false, raw: true });
  let log: Logger | undefined;
  const ctx: JobContext = {
    execution,
    job,
    // the execution row is the truth (the job's copy was checked against the schema, and must agree with it anyway)
    hubId: execution.hubId,
    payload: (execution.payload as Record<string, unknown>) ?? {},
    attempt,
    // made on first use: most runs log nothing, and a child logger costs a redaction pass over its bindings
    get log() {
      return (log ??= logger.child({ executionId, type: def.type, attempt }));
    },
  };
  try {
    const result = (await def.handle(ctx)) ?? {};
    if (!ctx.succeeded) await preparedQuery(
      'executions_succeed',
      `UPDATE executions SET status = 'SUCCEEDED', result = $2, error = NULL, finished_at = now() WHERE id = $1 AND status = 'RUNNING'`,
      [executionId, JSON.stringify(result)],
    );
    return ctx.reply ? { ...result, ...ctx.reply } : result;
  } catch (err) {
    const final = err instanceof UnrecoverableError || attempt >= (job.opts.attempts ?? 1);
    // an expected wait (DNS records not there yet) is said once, then kept at debug level
    if (err instanceof StillWaiting && !final) ctx.log[attempt === 1 ? 'info' : 'debug']({ reason: errorMessage(err) }, 'still waiting; will check again');
    else ctx.log.warn({ err: errorMessage(err), final }, 'job failed');
    try {
      if (final) await finalizeFailure(def, ctx, err as Error);
      else await Execution.update({ status: 'QUEUED', error: errorMessage(err) }, { where: { id: executionId, status: 'RUNNING' } });
    } catch (recordErr) {
      // PostgreSQL away: the job still fails with its own error, which the clock's reconciliation writes later
      ctx.log.error({ err: errorMessage(recordErr) }, 'could not record the job failure; reconciliation will');
    }
    throw err;
  }
}

/**
 * Data of the jobs a BullMQ job scheduler (repeatable job) produces: the same for every run, so it cannot name an
 * execution. Each run is recorded as its own execution, id = the job id (unique per run), when it first starts.
 */
export interface ScheduledJobData {
  executionId?: undefined;
  hubId: string | null;
  payload: Record<string, unknown>;
  scheduled: { resourceType?: string; resourceId?: string; createdBy: string };
}

async function recordScheduledRun(job: Job<ScheduledJobData>): Promise<string> {
  const id = job.id!;
  const { resourceType, resourceId, createdBy } = job.data.scheduled ?? { createdBy: 'scheduler' };
  await Execution.findOrCreate({
    where: { id },
    defaults: { id, processId: id, hubId: job.data.hubId, type: job.name, resourceType: resourceType ?? null, resourceId: resourceId ?? null, status: 'QUEUED', payload: job.data.payload ?? {}, createdBy },
  });
  return id;
}

/**
 * Runs the processor's failure handler, then marks the execution FAILED. When the handler throws (PostgreSQL away)
 * the execution stays unfinished, so that the clock's reconciliation runs the handler again: the resource must not
 * be stranded in its transitional state. Handlers are conditional updates, so a second run changes nothing.
 */
export async function finalizeFailure(def: ProcessorDefinition, ctx: JobContext, err: Error): Promise<void> {
  await def.onFinalFailure?.(ctx, err);
  await Execution.update(
    { status: 'FAILED', error: errorMessage(err), finishedAt: new Date() },
    { where: { id: ctx.execution.id, status: ['QUEUED', 'RUNNING'] } },
  );
}

export interface WorkerOptions {
  processors: ProcessorDefinition[];
  /** Restrict to these queues (default: every queue that has a processor). */
  queues?: QueueName[];
}

/**
 * How fast a dead worker's jobs are taken over. A worker holds a lock on each active job for `lockDuration` and
 * renews it every `lockDuration / 2`; every live worker checks every `stalledInterval` for active jobs whose lock is
 * gone and moves them back to waiting. So a SIGKILLed worker's jobs run again within lockDuration + stalledInterval
 * (defaults 8 s + 4 s = 12 s at most), while a long job stays safe as long as its process's event loop is never blocked
 * for more than lockDuration / 2 (4 s) at a stretch. HUB_JOB_LOCK_MS / HUB_STALLED_INTERVAL_MS override them.
 */
export const takeoverSettings = (): { lockDuration: number; stalledInterval: number } => config().takeover;

/** One BullMQ worker per queue that has processors; jobs are routed to their processor by job name (= type). */
export function startWorkers({ processors, queues }: WorkerOptions): Worker[] {
  const byType = new Map(processors.map((p) => [p.type, p]));
  const byQueue = new Map<QueueName, ProcessorDefinition[]>();
  for (const p of processors) {
    const q = queueOfType(p.type);
    if (queues && !queues.includes(q)) continue;
    byQueue.set(q, [...(byQueue.get(q) ?? []), p]);
  }
  const { lockDuration, stalledInterval } = takeoverSettings();
  return [...byQueue].map(([name, defs]) => {
    const worker = new Worker<JobData>(
      name,
      async (job) => {
        const def = byType.get(job.name);
        const refusal = await refused(def, job);
        if (refusal || !def) throw new UnrecoverableError(refusal);
        return observeJob(job.name, () => runExecution(def, job));
      },
      {
        connection: createRedis('worker'),
        prefix: config().queuePrefix,
        concurrency: Math.max(...defs.map((d) => d.concurrency ?? 8)),
        stalledInterval,
        lockDuration,
        maxStalledCount: 2,
        // after a failed fetch (Redis away) try again within a second, not BullMQ's 15 s: a worker then resumes as
        // soon as Redis is back (ioredis reconnects within 2 s)
        runRetryDelay: 1000,
      },
    );
    worker.on('error', (err) => logger.error({ queue: name, err: errorMessage(err) }, 'worker error'));
    // A job that stalled too often fails without running the processor: settle its execution here.
    worker.on('failed', (job, err) => {
      if (!job || !/stalled/i.test(err.message)) return;
      jobsTotal.inc({ type: job.name, outcome: 'stalled' });
      const def = byType.get(job.name);
      void Execution.findByPk(job.data.executionId ?? job.id).then((execution) => {
        if (!execution || !def || !['QUEUED', 'RUNNING'].includes(execution.status)) return;
        const ctx: JobContext = { execution, job, hubId: job.data.hubId, payload: job.data.payload, attempt: job.attemptsMade, log: logger };
        return finalizeFailure(def, ctx, err);
      }).catch((e) => logger.error({ err: errorMessage(e) }, 'could not settle a stalled job'));
    });
    return worker;
  });
}

export async function stopWorkers(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map(closeWithConnection));
}
