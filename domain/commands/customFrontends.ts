import { ForeignKeyConstraintError, Op, type Transaction } from 'sequelize';
import { config } from '../../shared/config.js';
import { withTransaction } from '../../shared/db.js';
import { badRequest, invalidState, notFound, refusal } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { enqueue } from '../jobs/enqueue.js';
import { CustomFrontend } from '../models/CustomFrontend.js';
import { CustomFrontendAuthProvider } from '../models/CustomFrontendAuthProvider.js';
import { Execution } from '../models/Execution.js';
import { Frontend } from '../models/Frontend.js';
import { ShareFrontend } from '../models/ShareFrontend.js';
import { normalizeName } from '../../shared/providers/dns.js';
import { missingAuthProviders } from './authProviders.js';
import { enqueueHostingCleanup } from './cleanup.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

export const PROVISION_JOB = 'frontends.provisionCustomFrontend';
export const ACTIVATE_JOB = 'frontends.activateCustomFrontend';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A fully qualified DNS hostname: two or more labels of letters, digits and inner hyphens, at most 253 characters. */
export function isHostname(value: string): boolean {
  const labels = value.split('.');
  return value.length <= 253 && labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^\d+$/.test(labels[labels.length - 1]);
}

export interface CustomFrontendView {
  frontend: CustomFrontend;
  authProviderIds: string[];
}

async function authProviderIdsOf(customFrontendId: string, transaction?: Transaction): Promise<string[]> {
  const rows = await CustomFrontendAuthProvider.findAll({ where: { customFrontendId }, order: [['position', 'ASC']], transaction });
  return rows.map((r) => r.authProviderId);
}

async function attachAuthProviders(hubId: string, customFrontendId: string, ids: string[], transaction: Transaction): Promise<void> {
  const missing = await missingAuthProviders(hubId, ids);
  if (missing.length) throw badRequest(`value for property '$.authProviderIds' names unknown auth provider(s): ${missing.join(', ')}`);
  await CustomFrontendAuthProvider.destroy({ where: { customFrontendId }, transaction });
  await CustomFrontendAuthProvider.bulkCreate(
    ids.map((authProviderId, position) => ({ hubId, customFrontendId, authProviderId, position })),
    { transaction },
  );
}

async function view(frontend: CustomFrontend, transaction?: Transaction): Promise<CustomFrontendView> {
  return { frontend, authProviderIds: await authProviderIdsOf(frontend.id, transaction) };
}

/** Views of a page of custom frontends with one query for all their auth provider links. */
async function customFrontendViews(frontends: CustomFrontend[]): Promise<CustomFrontendView[]> {
  if (!frontends.length) return [];
  const links = await CustomFrontendAuthProvider.findAll({ where: { customFrontendId: frontends.map((f) => f.id) }, order: [['position', 'ASC']] });
  return frontends.map((frontend) => ({
    frontend,
    authProviderIds: links.filter((l) => l.customFrontendId === frontend.id).map((l) => l.authProviderId),
  }));
}

async function findCustomFrontend(hubId: string, id: string): Promise<CustomFrontend> {
  const frontend = await CustomFrontend.findOne({ where: { hubId, id } });
  if (!frontend) throw notFound('custom frontend', id);
  return frontend;
}

export async function getCustomFrontend(hubId: string, id: string): Promise<CustomFrontendView> {
  return view(await findCustomFrontend(hubId, id));
}

/**
 * NEW custom frontend with its (inactive) frontend row; a job then creates the hosting infrastructure. The hostname
 * is unique across hubs (a unique index: a concurrent duplicate is a 409).
 */
export async function createCustomFrontend(
  hubId: string,
  input: { hostname: string; authProviderIds: string[] },
  createdBy: string,
): Promise<CustomFrontendView> {
  const hostname = normalizeName(input.hostname);
  if (!isHostname(hostname)) throw badRequest(`value for property '$.hostname' must be a DNS hostname such as shares.example.com (got '${input.hostname}')`);
  const authProviderIds = [...new Set(input.authProviderIds)];
  return withTransaction(async (transaction) => {
    const id = newId();
    const frontendId = newId();
    const frontend = await CustomFrontend.create({ id, hubId, hostname, domainName: hostname, frontendId, status: 'NEW', createdBy }, { transaction });
    await Frontend.create(
      { id: frontendId, hubId, customFrontendId: id, publicName: hostname, urlTemplate: `https://{token}.${hostname}`, active: false },
      { transaction },
    );
    await attachAuthProviders(hubId, id, authProviderIds, transaction);
    await enqueue({ type: PROVISION_JOB, hubId, resourceType: 'customFrontend', resourceId: id, payload: { customFrontendId: id }, createdBy, transaction });
    return { frontend, authProviderIds };
  });
}

/** Only authProviderIds change. A PENDING frontend whose DNS check gave up gets a new check. */
export async function updateCustomFrontend(hubId: string, id: string, input: { authProviderIds: string[] }, updatedBy: string): Promise<CustomFrontendView> {
  return withTransaction(async (transaction) => {
    const frontend = await CustomFrontend.findOne({ where: { hubId, id }, transaction, lock: transaction.LOCK.UPDATE });
    if (!frontend) throw notFound('custom frontend', id);
    await attachAuthProviders(hubId, id, [...new Set(input.authProviderIds)], transaction);
    frontend.changed('updatedAt', true);
    await frontend.save({ transaction });
    if (frontend.status === 'PENDING' && !(await activationUnderWay(id, transaction))) {
      await enqueueActivation(hubId, id, updatedBy, transaction);
    }
    return view(frontend, transaction);
  });
}

/** Refused (400) while shares are published on it; the foreign key of share_frontends settles any race. */
export async function deleteCustomFrontend(hubId: string, id: string, deletedBy = 'api'): Promise<void> {
  await withTransaction(async (transaction) => {
    const frontend = await CustomFrontend.findOne({ where: { hubId, id }, transaction, lock: transaction.LOCK.UPDATE });
    if (!frontend) throw notFound('custom frontend', id);
    const shares = await ShareFrontend.count({ where: { frontendId: frontend.frontendId }, transaction });
    if (shares) throw refusal('EH_IN_USE', `custom frontend '${id}' carries ${shares} share(s); delete them first`);
    await frontend.destroy({ transaction });
    // the provider clean-up is a job written with the delete (domain/commands/cleanup.ts)
    await enqueueHostingCleanup(hubId, id, frontend.hostname, deletedBy, transaction);
  }).catch((err) => {
    // a share created on it since the count: the foreign key refused the delete
    if (err instanceof ForeignKeyConstraintError) throw refusal('EH_IN_USE', `custom frontend '${id}' carries shares; delete them first`);
    throw err;
  });
}

export interface DnsRecords {
  hubId: string;
  customFrontendId: string;
  domainName: string;
  aRecord: { name: string; ipAddress: string[] };
  cnameRecords: { name: string; value: string }[];
}

/** The records the owner must publish; they exist once the infrastructure is ready (PENDING), before that a 400. */
export async function dnsRecords(hubId: string, id: string): Promise<DnsRecords> {
  const frontend = await findCustomFrontend(hubId, id);
  if (frontend.status === 'NEW' || !frontend.ingressAddresses || !frontend.validationName || !frontend.validationValue) {
    throw invalidState('custom frontend', frontend.status, 'read DNS records (the hosting infrastructure is not ready yet)');
  }
  return {
    hubId,
    customFrontendId: id,
    domainName: frontend.domainName,
    aRecord: { name: frontend.hostname, ipAddress: frontend.ingressAddresses },
    cnameRecords: [{ name: frontend.validationName, value: frontend.validationValue }],
  };
}

async function activationUnderWay(customFrontendId: string, transaction: Transaction): Promise<boolean> {
  const running = await Execution.count({
    where: { resourceType: 'customFrontend', resourceId: customFrontendId, type: ACTIVATE_JOB, status: { [Op.in]: ['QUEUED', 'RUNNING'] } },
    transaction,
  });
  return running > 0;
}

/**
 * One execution that re-checks DNS every HUB_DNS_CHECK_INTERVAL_MS (a retry per check) until the records resolve or
 * the frontend's DNS wait (HUB_DNS_WAIT, from when it became PENDING) ends; the attempts cover the wait with room
 * to spare, the deadline is what ends it.
 */
export function enqueueActivation(hubId: string, customFrontendId: string, createdBy: string, transaction: Transaction) {
  const { dnsCheckIntervalMs: interval, dnsWaitMs } = config();
  return enqueue({
    type: ACTIVATE_JOB,
    hubId,
    resourceType: 'customFrontend',
    resourceId: customFrontendId,
    payload: { customFrontendId },
    createdBy,
    transaction,
    jobOptions: { attempts: Math.ceil(dnsWaitMs / interval) + 10, backoff: { type: 'fixed', delay: interval } },
  });
}

/** One page of the hub's custom frontends, each with its auth providers. */
export async function listCustomFrontends(hubId: string, req: PageRequest): Promise<Page<CustomFrontendView>> {
  const page = await findPage(CustomFrontend, { hubId }, req);
  return { ...page, content: await customFrontendViews(page.content) };
}
