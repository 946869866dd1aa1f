import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { z, type ZodType } from 'zod';
import { config } from '../shared/config.js';
import {
  executionById,
  executionFailed,
  executionRequeued,
  executionSucceeded,
  recordRefusedJob,
  recordScheduledExecution,
  startExecution,
} from '../domain/commands/executions.js';
import { NotClaimed, StillWaiting } from '../shared/errors.js';
import type { JobData } from '../domain/jobs/enqueue.js';
import { logger, type Logger } from '../shared/logger.js';
import { logThrottle } from '../shared/logThrottle.js';
import { closeWithConnection, queueOfType, type QueueName } from '../domain/jobs/queues.js';
import { createRedis, readyRedis } from '../shared/redis.js';
import { jobEndsChannelPattern, type JobEnd } from '../domain/jobs/jobEnds.js';
import { jobsTotal, observeJob } from '../shared/telemetry/index.js';
import type { JobContext, ProcessorDefinition, RunExecution } from './processor.js';

const id = z.string().min(1).max(200);
/** Who asked: a principal (`key:...`, `admin`, `certificate-request-token:<name>`, ...). */
const principal = z.string().min(1).max(300);
const scheduledSchema = z.object({ resourceType: id.optional(), resourceId: id.optional(), createdBy: id }).strict();

/** The whole of a job's data for this processor: what `dispatch` (or the job scheduler) writes, and nothing else. */
function jobDataSchema(def: ProcessorDefinition): ZodType {
  // a reply channel is one of the web processes' job-ends channels: the worker publishes nowhere else
  const replyTo = z.string().max(200).regex(jobEndsChannelPattern());
  const ofExecution = z
    .object({ executionId: id, hubId: id.nullable(), payload: def.payload, createdBy: principal.optional(), replyTo: replyTo.optional() })
    .strict();
  // a scheduled run that the sweeper re-adds carries its execution's id like any other job
  return def.scheduled ? z.union([z.object({ hubId: id.nullable(), payload: def.payload, scheduled: scheduledSchema }).strict(), ofExecution]) : ofExecution;
}

/** Why a job's data does not match its processor's schema (paths and messages), or undefined when it does. */
function jobDataRefusal(def: ProcessorDefinition, data: unknown): string | undefined {
  const parsed = (jobDataSchemas.get(def) ?? jobDataSchemas.set(def, jobDataSchema(def)).get(def)!).safeParse(data);
  if (parsed.success) return undefined;
  const issues = parsed.error.issues.slice(0, 5).map((i) => `${['$', ...i.path].join('.')}: ${i.message}`);
  return `job data refused: it does not match the schema of '${def.type}' (${issues.join('; ')})`.slice(0, 2000);
}
const jobDataSchemas = new WeakMap<ProcessorDefinition, ZodType>();

/** Refuses (and records) a job of no known type or whose data does not match its processor's schema: the reason. */
async function refused(def: ProcessorDefinition | undefined, job: Job): Promise<string | undefined> {
  const refusal = def ? jobDataRefusal(def, job.data) : `no processor for job type '${job.name.slice(0, 200)}'`;
  if (!refusal) return undefined;
  logger.warn({ type: job.name, jobId: job.id, refusal }, 'job refused');
  await recordRefusedJob(String(job.id), job.name, refusal).catch((err) => logger.error({ err: errorMessage(err) }, 'could not record a refused job'));
  return refusal;
}

const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

/**
 * Runs one job as its execution: QUEUED -> RUNNING -> SUCCEEDED | FAILED (or back to QUEUED with the error while
 * a retry waits). A job whose execution is already finished or gone does nothing, so a duplicate cannot redo work.
 */
async function runExecution(def: ProcessorDefinition, job: Job<JobData>): Promise<unknown> {
  try {
    return await startAndRun(def, job);
  } catch (err) {
    if (!(err instanceof NotStarted)) throw err;
    // PostgreSQL away: every job fails alike before its handler; BullMQ retries it, the clock's reconciliation settles it
    notStarted(err.message, (repeated) =>
      logger.warn({ type: def.type, jobId: job.id, err: err.message, repeated }, 'job not started: its execution could not be read or recorded'),
    );
    throw err.cause;
  }
}

/** A failure to read or record a job's execution, before its handler ran. */
class NotStarted extends Error {
  constructor(readonly cause: unknown) {
    super(errorMessage(cause));
  }
}
const notStarting = <T>(step: Promise<T>): Promise<T> =>
  step.catch((err) => {
    throw new NotStarted(err);
  });

const workerErrors = logThrottle(5000);
const notStarted = logThrottle(5000);

async function startAndRun(def: ProcessorDefinition, job: Job<JobData>): Promise<unknown> {
  const executionId = job.data.executionId ?? (await notStarting(recordScheduledRun(job as unknown as Job<ScheduledJobData>)));
  const attempt = job.attemptsMade + 1;
  const { hubId, payload, createdBy } = job.data;
  if (job.data.executionId !== undefined && createdBy !== undefined && def.claimsExecution?.(payload)) {
    try {
      // the handler's statement claims the execution (and checks that it is this job's): nothing to mark first
      return await run(def, job, { id: executionId, hubId, payload, createdBy }, attempt, { claiming: true });
    } catch (err) {
      // not claimed, or failed on the job's own data: only the usual way (the row's data) records an outcome
      if (!(err instanceof NotClaimed)) logger.debug({ executionId, err: errorMessage(err) }, 'claiming run failed; running the execution the usual way');
    }
  }
  const execution = await notStarting(startExecution(executionId, attempt, def.type));
  if (!execution) {
    const existing = await notStarting(executionById(executionId));
    if (existing && existing.type !== def.type) {
      const refusal = `job refused: its execution ${executionId} is a '${existing.type}', not a '${def.type}'`;
      logger.warn({ type: def.type, jobId: job.id, refusal }, 'job refused');
      throw new UnrecoverableError(refusal);
    }
    logger.info({ executionId, status: existing?.status ?? 'missing' }, 'job skipped: execution already finished or gone');
    return { skipped: existing?.status ?? 'missing' };
  }
  // the execution row is the truth (the job's copy was checked against the schema, and must agree with it anyway)
  return run(
    def,
    job,
    { id: execution.id, hubId: execution.hubId, payload: (execution.payload as Record<string, unknown>) ?? {}, createdBy: execution.createdBy },
    attempt,
  );
}

/**
 * The handler on its execution, then the outcome recorded: SUCCEEDED, or FAILED / back to QUEUED with the error. A
 * claiming run records nothing when it fails: its data is the job's, and a failure may come of data that is not the
 * execution's; the caller runs the execution the usual way then.
 */
async function run(def: ProcessorDefinition, job: Job<JobData>, execution: RunExecution, attempt: number, { claiming = false } = {}): Promise<unknown> {
  const executionId = execution.id;
  let log: Logger | undefined;
  const ctx: JobContext = {
    execution,
    job,
    hubId: execution.hubId,
    payload: execution.payload,
    attempt,
    // made on first use: most runs log nothing, and a child logger costs a redaction pass over its bindings
    get log() {
      return (log ??= logger.child({ executionId, type: def.type, attempt }));
    },
  };
  try {
    const result = (await def.handle(ctx)) ?? {};
    if (!ctx.succeeded) await executionSucceeded(executionId, result);
    return ctx.reply ? { ...result, ...ctx.reply } : result;
  } catch (err) {
    if (claiming || err instanceof NotClaimed) throw err;
    const final = err instanceof UnrecoverableError || attempt >= (job.opts.attempts ?? 1);
    // an expected wait (DNS records not there yet) is said once, then kept at debug level
    if (err instanceof StillWaiting && !final) ctx.log[attempt === 1 ? 'info' : 'debug']({ reason: errorMessage(err) }, 'still waiting; will check again');
    else ctx.log.warn({ err: errorMessage(err), final }, 'job failed');
    try {
      if (final) await finalizeFailure(def, ctx, err as Error);
      else await executionRequeued(executionId, errorMessage(err), attempt);
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
interface ScheduledJobData {
  executionId?: undefined;
  hubId: string | null;
  payload: Record<string, unknown>;
  scheduled: { resourceType?: string; resourceId?: string; createdBy: string };
}

async function recordScheduledRun(job: Job<ScheduledJobData>): Promise<string> {
  const id = job.id!;
  const { resourceType, resourceId, createdBy } = job.data.scheduled ?? { createdBy: 'scheduler' };
  await recordScheduledExecution({ id, hubId: job.data.hubId, type: job.name, resourceType, resourceId, payload: job.data.payload ?? {}, createdBy });
  return id;
}

/**
 * Runs the processor's failure handler, then marks the execution FAILED. When the handler throws (PostgreSQL away)
 * the execution stays unfinished, so that the clock's reconciliation runs the handler again: the resource must not
 * be stranded in its transitional state. Handlers are conditional updates, so a second run changes nothing.
 */
export async function finalizeFailure(def: ProcessorDefinition, ctx: JobContext, err: Error): Promise<void> {
  await def.onFinalFailure?.(ctx, err);
  await executionFailed(ctx.execution.id, errorMessage(err), ctx.attempt);
}

interface WorkerOptions {
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
    // every queue's worker reports each reconnection attempt while Redis is away: one line per 5 s says it
    worker.on('error', (err) => {
      const message = errorMessage(err);
      workerErrors(message, (repeated) => logger.error({ queue: name, err: message, repeated }, 'worker error'));
    });
    // the web process waiting for the job hears its end (jobs/jobEnds.ts), once BullMQ has recorded it: completed, or
    // failed for good (a failure that will be retried has no finishedOn)
    worker.on('completed', (job, value) => publishEnd(job, { id: String(job.id), ok: true, value }));
    worker.on('failed', (job, err) => {
      if (job?.finishedOn) publishEnd(job, { id: String(job.id), ok: false, reason: err.message });
    });
    // A job that stalled too often fails without running the processor: settle its execution here.
    worker.on('failed', (job, err) => {
      if (!job || !/stalled/i.test(err.message)) return;
      jobsTotal.inc({ type: job.name, outcome: 'stalled' });
      const def = byType.get(job.name);
      void executionById(job.data.executionId ?? String(job.id))
        .then((execution) => {
          if (!execution || !def || !['QUEUED', 'RUNNING'].includes(execution.status)) return;
          const ctx: JobContext = { execution, job, hubId: job.data.hubId, payload: job.data.payload, attempt: job.attemptsMade, log: logger };
          return finalizeFailure(def, ctx, err);
        })
        .catch((e) => logger.error({ err: errorMessage(e) }, 'could not settle a stalled job'));
    });
    return worker;
  });
}

/**
 * A job's end on the channel its data names (a web process's: jobs/jobEnds.ts). At most once: lost while Redis is
 * away, when the waiter reads the job's state instead.
 */
function publishEnd(job: Job<JobData>, end: JobEnd): void {
  const channel = job.data?.replyTo;
  // a job refused for its data fails too: its channel may be anything
  if (typeof channel !== 'string' || !(replyChannel ??= jobEndsChannelPattern()).test(channel)) return;
  // the connection fails fast; its first connection is waited for (a fresh worker's first jobs end before it is up)
  readyRedis()
    .then((r) => r.publish(channel, JSON.stringify(end)))
    .catch((err) => logger.debug({ jobId: job.id, err: errorMessage(err) }, 'job end not published; its waiter reads the job'));
}

let replyChannel: RegExp | undefined;

export async function stopWorkers(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => closeWithConnection(w)));
}
