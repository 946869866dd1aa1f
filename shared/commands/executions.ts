/** Reading executions: the job monitor and audit trail of a hub (they are written by the jobs and commands). */
import { notFound } from '../errors.js';
import { Execution } from '../models/Execution.js';
import { findPage, type Page, type PageRequest } from '../paging.js';

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
