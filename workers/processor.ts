/**
 * The shape of a job processor. Kept apart from runner.ts: processor files import this, and the runner is handed the
 * processors (workers/processors/index.ts lists them), so nothing imports back into a module still loading.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { z, type ZodType } from 'zod';
import type { JobData } from '../domain/jobs/enqueue.js';
import type { Logger } from '../shared/logger.js';
import type { Execution } from '../domain/models/Execution.js';

/** What a handler knows of its execution: the row's, or for a run that claims it, the job's copy (checked when claimed). */
export type RunExecution = Pick<Execution, 'id' | 'hubId' | 'payload' | 'createdBy'>;

export interface JobContext {
  execution: RunExecution;
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
   * Set by a handler whose last statement also marked this execution SUCCEEDED with the result it returns (as the
   * certificate redemption's does, domain/commands/issuance.ts): one statement (and one commit) instead of two; the
   * runner then writes nothing more.
   */
  succeeded?: boolean;
}

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
  /**
   * True for the runs (by payload) whose handler's one statement claims the execution itself: it goes on only while the
   * execution is still to run and is the job's (its type, payload and who asked, as the job carries them), and marks
   * it SUCCEEDED with this attempt and its start; when the execution was not the job's to claim it throws NotClaimed.
   * The runner then does not mark the execution RUNNING first (one statement and one commit fewer per run, which goes
   * QUEUED -> SUCCEEDED). When such a run fails in any way (NotClaimed included) nothing is recorded of it: the runner
   * takes the usual way, where the execution row's data runs and its outcome is recorded.
   */
  claimsExecution?(payload: Record<string, unknown>): boolean;
}

export const defineProcessor = (d: ProcessorDefinition): ProcessorDefinition => d;

/** An empty payload: the job needs nothing but its type. */
export const NO_PAYLOAD = z.object({}).strict();

/** A failure that retrying cannot fix: the execution becomes FAILED at once with this message. */
export const permanentFailure = (message: string) => new UnrecoverableError(message);
