import { randomBytes, X509Certificate } from 'node:crypto';
import { Op, QueryTypes, type Transaction } from 'sequelize';
import { db, withTransaction } from '../../shared/db.js';
import { notFound } from '../../shared/errors.js';
import { enqueue } from '../jobs/enqueue.js';
import { CREATE_HUB_CA_JOB } from './pkiJobs.js';
import { changedQuotas, type QuotaChange } from './hubQuotas.js';
import { recordRevocation, requestCrlsQuietly } from './revocations.js';
import { REVOCATION_REASONS } from '../../shared/pki/crl.js';
import { newId, randomToken } from '../../shared/ids.js';
import { ApiKey } from '../models/ApiKey.js';
import { Environment } from '../models/Environment.js';
import { Frontend } from '../models/Frontend.js';
import { Hub, type HubFeatures } from '../models/Hub.js';
import { ipsecProvider } from '../../shared/providers/ipsec.js';
import { forgetHubRecordings } from './recordings.js';
import { sha256 } from '../../shared/secrets.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

/** The operator's fields of a hub: its quotas given as numbers, or `null` for the service's default. */
interface HubInput {
  name: string;
  features?: Partial<HubFeatures>;
  quotas?: QuotaChange;
}

/** A new hub; its issuing CA is made by a worker job (the web process never holds CA keys). */
export async function createHub(input: HubInput): Promise<Hub> {
  return withTransaction(async (transaction) => {
    const hub = await Hub.create(
      { id: newId(), name: input.name, features: { ipsec: input.features?.ipsec ?? false }, quotas: changedQuotas({}, input.quotas ?? {}) },
      { transaction },
    );
    await enqueue({ type: CREATE_HUB_CA_JOB, hubId: hub.id, resourceType: 'hub', resourceId: hub.id, createdBy: 'admin', transaction });
    return hub;
  });
}

export async function getHub(id: string): Promise<Hub> {
  const hub = await Hub.findByPk(id);
  if (!hub) throw notFound('hub', id);
  return hub;
}

export async function updateHub(id: string, input: Partial<HubInput>): Promise<Hub> {
  const hub = await getHub(id);
  if (input.name !== undefined) hub.name = input.name;
  if (input.features) hub.features = { ...hub.features, ...input.features };
  // a quota lowered below what the hub holds keeps what it holds; only new shares are refused
  if (input.quotas) hub.quotas = changedQuotas(hub.quotas, input.quotas);
  await hub.save();
  return hub;
}

/**
 * Deletes a hub and everything in it, in one statement (every table of a hub's resources cascades from hubs): its
 * API keys stop working at once (the auth caches hear of it, migration 0600), its shares stop answering at the edge
 * (routes, certificates and agents are notified), its executions go with it (their queued jobs find nothing to do).
 * The IPsec provider is told afterwards to release the hub's tunnels' records (the data plane already stops them:
 * it only runs tunnels whose rows remain). Its shares' recorded exchanges are deleted once the rows are. The hub's
 * issuing CA goes too, and is revoked in the root's CRL.
 */
export async function deleteHub(id: string): Promise<void> {
  const { tunnelIds, root } = await withTransaction(async (transaction) => {
    const tunnels = await db().query<{ id: string }>(`SELECT id FROM ipsec_tunnels WHERE hub_id = :id`, {
      replacements: { id },
      type: QueryTypes.SELECT,
      transaction,
    });
    const cas = (await db().query(
      `SELECT i.id, i.certificate_pem AS "certificatePem", r.id AS "rootId" FROM certificate_authorities i, certificate_authorities r
       WHERE i.kind = 'ISSUING' AND i.hub_id = :id AND r.kind = 'ROOT'`,
      { replacements: { id }, type: QueryTypes.SELECT, transaction },
    )) as { id: string; certificatePem: string; rootId: string }[];
    const deleted = await db().query(`DELETE FROM hubs WHERE id = :id RETURNING id`, { replacements: { id }, type: QueryTypes.SELECT, transaction });
    if (!deleted.length) throw notFound('hub', id);
    // the hub's issuing CA goes with it: the root's CRL lists it from now on
    for (const ca of cas) {
      const serialNumber = new X509Certificate(ca.certificatePem).serialNumber.toLowerCase();
      await recordRevocation(
        { caId: ca.rootId, hubId: null, serialNumber, certificateId: ca.id, reasonCode: REVOCATION_REASONS.cessationOfOperation, revokedBy: 'admin' },
        transaction,
      );
    }
    return { tunnelIds: tunnels.map((t) => t.id), root: cas[0]?.rootId };
  });
  await forgetHubRecordings(id);
  if (root) await requestCrlsQuietly([{ caId: root, hubId: null }], 'scheduler');
  if (tunnelIds.length) await ipsecProvider().releaseTunnels(tunnelIds);
}

/** The hub's API keys, revoked ones included (never their tokens). */
export async function apiKeysOf(hubId: string): Promise<ApiKey[]> {
  await getHub(hubId);
  return ApiKey.findAll({
    where: { hubId },
    order: [
      ['createdAt', 'ASC'],
      ['id', 'ASC'],
    ],
  });
}

/** A new key; the token is returned once and only its SHA-256 is stored. */
export async function createApiKey(hubId: string, name: string): Promise<{ key: ApiKey; token: string }> {
  await getHub(hubId);
  const token = `ehk_${randomBytes(32).toString('base64url')}`;
  const key = await ApiKey.create({ id: newId(), hubId, name, username: `key-${randomToken(16)}`, tokenHash: sha256(token) });
  return { key, token };
}

export async function revokeApiKey(hubId: string, id: string): Promise<ApiKey> {
  const key = await ApiKey.findOne({ where: { id, hubId } });
  if (!key) throw notFound('api key', id);
  if (!key.revokedAt) {
    key.revokedAt = new Date();
    await key.save();
  }
  return key;
}

/**
 * The hub's default environment (created on first need): where a share goes when its create names none. The partial
 * unique index (one default per hub) makes concurrent first uses agree on one row.
 */
export async function defaultEnvironmentId(hubId: string, transaction?: Transaction): Promise<string> {
  await db().query(
    `INSERT INTO environments (env_z_id, hub_id, description, created_by, is_default)
     VALUES (:envZId, :hubId, 'default', 'system', true) ON CONFLICT (hub_id) WHERE is_default DO NOTHING`,
    { replacements: { envZId: randomToken(12), hubId }, transaction },
  );
  const row = await Environment.findOne({ where: { hubId, isDefault: true }, transaction });
  if (!row) throw new Error(`default environment of hub ${hubId} vanished`);
  return row.envZId;
}

export async function createStandardFrontend(input: { publicName: string; urlTemplate: string }): Promise<Frontend> {
  return Frontend.create({ id: newId(), publicName: input.publicName, urlTemplate: input.urlTemplate, hubId: null });
}

/** One page of every hub (the operator's list). */
export const listHubs = (req: PageRequest): Promise<Page<Hub>> => findPage(Hub, {}, req);

/** Standard frontends and the hub's ACTIVE custom frontends: what a share may be published on. */
export const visibleFrontends = (hubId: string) => ({ active: true, [Op.or]: [{ hubId: null }, { hubId }] });

/** The frontends a hub may publish on, oldest first. */
export const frontendsOf = (hubId: string): Promise<Frontend[]> =>
  Frontend.findAll({
    where: visibleFrontends(hubId),
    order: [
      ['createdAt', 'ASC'],
      ['id', 'ASC'],
    ],
  });
