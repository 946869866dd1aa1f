/**
 * Environments: where shares are hosted. An environment's `reach` says how the edge reaches its targets: 'agent' only
 * through its connected agents (never by itself, whatever answers at the target's address in the edge's own
 * network), 'edge' directly. The first agent enrollment makes it 'agent' (domain/commands/agents.ts, in the
 * enrollment's transaction); nothing sets it back but an explicit change here, recorded as an execution.
 */
import { QueryTypes } from 'sequelize';
import { db, withTransaction } from '../../shared/db.js';
import { notFound, refusal } from '../../shared/errors.js';
import { newId, randomToken } from '../../shared/ids.js';
export { ENVIRONMENT_REACHES } from '../models/Environment.js';
import { Environment, type EnvironmentReach } from '../models/Environment.js';
import { Execution } from '../models/Execution.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';
import { REVOCATION_REASONS } from '../../shared/pki/crl.js';
import { recordAgentRevocations, requestCrlsQuietly } from './revocations.js';

const SET_REACH_TYPE = 'environments.setReach';

export async function createEnvironment(hubId: string, input: { description: string; reach?: EnvironmentReach }, createdBy: string): Promise<Environment> {
  return Environment.create({ envZId: randomToken(12), hubId, description: input.description, reach: input.reach ?? 'edge', createdBy });
}

/**
 * Changes an environment's description and/or reach. A reach given is recorded as a finished execution (the audit
 * trail of who opened or closed the edge's direct path), in the same transaction as the change.
 */
export async function updateEnvironment(
  hubId: string,
  envZId: string,
  input: { description?: string; reach?: EnvironmentReach },
  updatedBy: string,
): Promise<Environment> {
  return withTransaction(async (transaction) => {
    const env = await Environment.findOne({ where: { hubId, envZId }, transaction, lock: transaction.LOCK.UPDATE });
    if (!env) throw notFound('environment', envZId);
    const from = env.reach;
    if (input.description !== undefined) env.description = input.description;
    if (input.reach !== undefined) env.reach = input.reach;
    await env.save({ transaction });
    if (input.reach !== undefined) {
      const id = newId();
      const now = new Date();
      await Execution.create(
        {
          id,
          processId: id,
          hubId,
          type: SET_REACH_TYPE,
          resourceType: 'environment',
          resourceId: envZId,
          status: 'SUCCEEDED',
          payload: { reach: input.reach },
          result: { from, to: input.reach },
          attempts: 1,
          createdBy: updatedBy,
          startedAt: now,
          finishedAt: now,
        },
        { transaction },
      );
    }
    return env;
  });
}

/** The first agent enrollment of an environment: from now on it is reached only through agents (same transaction). */
export async function reachThroughAgents(hubId: string, envZId: string, transaction: import('sequelize').Transaction): Promise<void> {
  await db().query(`UPDATE environments SET reach = 'agent' WHERE hub_id = :hubId AND env_z_id = :envZId AND reach <> 'agent'`, {
    replacements: { hubId, envZId },
    transaction,
  });
}

/**
 * Deletes an environment that hosts nothing (no share, no IPsec share): its agents are revoked with it (their rows
 * go, the edges close their connections, and their certificates are recorded revoked, cessationOfOperation, in the
 * same transaction; the CA's CRL is asked for once it committed). The hub's default environment stays. `edgehub
 * share` uses this to leave nothing behind when its first run fails.
 */
export async function deleteEnvironment(hubId: string, envZId: string, revokedBy = 'api'): Promise<void> {
  const caId = await withTransaction(async (transaction) => {
    const env = await Environment.findOne({ where: { hubId, envZId }, transaction, lock: transaction.LOCK.UPDATE });
    if (!env) throw notFound('environment', envZId);
    if (env.isDefault) throw refusal('EH_DEFAULT_ENVIRONMENT', `environment ${envZId} is the hub's default environment; it cannot be deleted`);
    const [counts] = await db().query<{ shares: number; ipsec: number }>(
      `SELECT (SELECT count(*) FROM shares WHERE hub_id = :hubId AND env_z_id = :envZId)::int AS shares,
              (SELECT count(*) FROM ipsec_shares WHERE hub_id = :hubId AND env_z_id = :envZId AND status <> 'DELETED')::int AS ipsec`,
      { replacements: { hubId, envZId }, transaction, type: QueryTypes.SELECT },
    );
    if (counts.shares || counts.ipsec)
      throw refusal(
        'EH_ENVIRONMENT_NOT_EMPTY',
        `environment ${envZId} still hosts ${counts.shares} share(s) and ${counts.ipsec} IPsec share(s); delete them first`,
      );
    await db().query(`DELETE FROM ipsec_shares WHERE hub_id = :hubId AND env_z_id = :envZId`, { replacements: { hubId, envZId }, transaction });
    const agents = await db().query<{ id: string; serialNumber: string }>(
      `DELETE FROM agents WHERE hub_id = :hubId AND env_z_id = :envZId RETURNING id, serial_number AS "serialNumber"`,
      { replacements: { hubId, envZId }, type: QueryTypes.SELECT, transaction },
    );
    const revoked = await recordAgentRevocations(hubId, agents, REVOCATION_REASONS.cessationOfOperation, revokedBy, transaction);
    await env.destroy({ transaction });
    return revoked;
  });
  if (caId) await requestCrlsQuietly([{ caId, hubId }], 'scheduler');
}

/** One page of the hub's environments. */
export const listEnvironments = (hubId: string, req: PageRequest): Promise<Page<Environment>> => findPage(Environment, { hubId }, req);

export async function getEnvironment(hubId: string, envZId: string): Promise<Environment> {
  const env = await Environment.findOne({ where: { envZId, hubId } });
  if (!env) throw notFound('environment', envZId);
  return env;
}
