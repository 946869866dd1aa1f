import { dispatch } from '../jobs.js';
import { Execution } from '../models/Execution.js';
import { ROTATE_JOB, waitForPkiJob } from '../pki/issuance.js';
import { invalidState, notFound } from '../errors.js';
import { ensureActiveKeyRow, forgetActiveKey, forgetPublishedKeys, revokeSigningKey } from '../pki/signingKeys.js';

/**
 * Asks the worker to rotate the active signing key. The execution (and so the BullMQ job) id names the key being
 * superseded, so two requests for one rotation (two clock ticks, a retried request) are one job; the worker's
 * conditional update is the second guard. A FAILED rotation does not block the next one: the next request takes the
 * next id in the series (`rotate-signing-key-<kid>-2`, `-3`, ...), so there is one rotation at a time and any
 * number over time.
 */
export async function requestRotation(createdBy: string): Promise<Execution> {
  const active = await ensureActiveKeyRow();
  const base = `rotate-signing-key-${active.kid}`;
  const tried = (await Execution.findAll({ where: { resourceType: 'signingKey', resourceId: active.kid, type: ROTATE_JOB }, attributes: ['id', 'status'] }))
    .filter((e) => e.id === base || (e.id.startsWith(`${base}-`) && /^\d+$/.test(e.id.slice(base.length + 1))));
  const unfinished = tried.find((e) => e.status !== 'FAILED');
  const id = unfinished?.id ?? (tried.length === 0 ? base : `${base}-${tried.length + 1}`);
  await Execution.bulkCreate(
    [{ id, processId: id, hubId: null, type: ROTATE_JOB, resourceType: 'signingKey', resourceId: active.kid, status: 'QUEUED', payload: { supersedes: active.kid }, createdBy }],
    { ignoreDuplicates: true },
  );
  const execution = (await Execution.findByPk(id)) as Execution;
  if (execution.status === 'QUEUED' || execution.status === 'RUNNING') await dispatch(execution);
  return execution;
}

/** The operator's rotation: waits for the job and answers with the new kid. */
export async function rotateNow(createdBy: string): Promise<{ kid: string; previousKid: string }> {
  const execution = await requestRotation(createdBy);
  const result =
    execution.status === 'SUCCEEDED' ? (execution.result as { kid: string }) : await waitForPkiJob<{ kid: string }>(execution.processId);
  forgetActiveKey();
  forgetPublishedKeys();
  return { kid: result.kid, previousKid: String(execution.payload.supersedes) };
}

/** The operator's revocation of a (compromised) key: 404 for an unknown kid, 400 for one already revoked. */
export async function revokeNow(kid: string): Promise<{ kid: string; status: 'REVOKED'; revokedAt: Date; activeKid: string }> {
  const result = await revokeSigningKey(kid);
  if (!result) throw notFound('signing key', kid);
  if ('refused' in result) throw invalidState('signing key', result.refused, 'revoke');
  return result;
}
