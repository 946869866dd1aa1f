import { config } from '../../shared/config.js';
import { QueryTypes, UniqueConstraintError, type Transaction } from 'sequelize';
import { withTransaction } from '../../shared/db.js';
import { badRequest, notFound, refusal } from '../../shared/errors.js';
import { randomToken } from '../../shared/ids.js';
import { egressPolicy } from '../../shared/egress.js';
import { enqueue } from '../jobs/enqueue.js';
import { enqueueShareCleanup } from './cleanup.js';
import { forgetShareRecordings } from './recordings.js';
import { AuthProvider } from '../models/AuthProvider.js';
import { Environment } from '../models/Environment.js';
import { Frontend } from '../models/Frontend.js';
import { Share } from '../models/Share.js';
import { ShareFrontend } from '../models/ShareFrontend.js';
import { frontendHosting } from '../../shared/providers/frontendHosting.js';
import { defaultEnvironmentId, visibleFrontends } from './platform.js';
import { reserveShareQuota } from './hubQuotas.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';
import { type PolicyInput, type StoredPolicy, storedPolicy } from '../../shared/sharePolicy.js';

export const PROVISION_SHARE_JOB = 'shares.provisionShare';

interface ShareInput {
  name: string;
  frontendIds: string[];
  target: string;
  envZId?: string;
  authProviderId?: string | null;
  mutualTls?: boolean;
  inspect?: boolean;
  /** Which agent a client's requests go to: any ('none'), by client address, or by a cookie naming the agent. */
  affinity?: 'none' | 'client-ip' | 'cookie';
  targetProtocol?: 'http1' | 'h2';
  protocol?: 'http' | 'tcp';
  oauthEmailDomains?: string[] | null;
  oauthAuthorizationCheckInterval?: string | null;
  /** A TCP share's idle timeout (ISO 8601 duration); null: the edge's HUB_EDGE_TCP_IDLE_TIMEOUT. */
  tcpIdleTimeout?: string | null;
  /** The share's traffic policy (shared/sharePolicy.ts); null or absent: none. */
  policy?: PolicyInput | null;
}

type ShareUpdate = Partial<
  Pick<
    ShareInput,
    'mutualTls' | 'inspect' | 'affinity' | 'authProviderId' | 'oauthEmailDomains' | 'oauthAuthorizationCheckInterval' | 'tcpIdleTimeout' | 'policy'
  >
>;

const idleTimeoutRefused = "property '$.tcpIdleTimeout' is for TCP shares: an HTTP share's connections are kept by its clients' keep-alive";

export interface ShareView {
  share: Share;
  frontendIds: string[];
  authProvider: AuthProvider | null;
}

async function frontendIdsOf(shareZId: string): Promise<string[]> {
  const rows = await ShareFrontend.findAll({ where: { shareZId }, order: [['position', 'ASC']] });
  return rows.map((r) => r.frontendId);
}

export async function shareView(share: Share): Promise<ShareView> {
  const [frontendIds, authProvider] = await Promise.all([
    frontendIdsOf(share.zId),
    share.authProviderId ? AuthProvider.findOne({ where: { hubId: share.hubId, id: share.authProviderId } }) : null,
  ]);
  return { share, frontendIds, authProvider };
}

/** The views of a page of shares with two queries, not two per share. */
async function shareViews(shares: Share[]): Promise<ShareView[]> {
  if (!shares.length) return [];
  const zIds = shares.map((s) => s.zId);
  const providerIds = [...new Set(shares.map((s) => s.authProviderId).filter((id): id is string => Boolean(id)))];
  const [links, providers] = await Promise.all([
    ShareFrontend.findAll({ where: { shareZId: zIds }, order: [['position', 'ASC']] }),
    providerIds.length ? AuthProvider.findAll({ where: { hubId: shares[0].hubId, id: providerIds } }) : Promise.resolve([]),
  ]);
  return shares.map((share) => ({
    share,
    frontendIds: links.filter((l) => l.shareZId === share.zId).map((l) => l.frontendId),
    authProvider: providers.find((p) => p.id === share.authProviderId) ?? null,
  }));
}

export async function findShare(hubId: string, zId: string): Promise<Share> {
  const share = await Share.findOne({ where: { hubId, zId } });
  if (!share) throw notFound('share', zId);
  return share;
}

/**
 * A share on the first of `frontendIds` (all must be visible to the hub), PROVISIONING until its job has
 * published it. The zId is the share token that replaces {token} in the frontend's URL template.
 */
/**
 * The share's public address. A mutual-TLS share answers only on the TLS listener, so an http:// template of the
 * edge's plain listener becomes the https:// address of its TLS listener (the port of HUB_EDGE_HTTPS_PORT).
 */
function endpointOf(urlTemplate: string, zId: string, mutualTls: boolean): string {
  const plain = urlTemplate.replaceAll('{token}', zId);
  if (!mutualTls || !plain.startsWith('http://')) return plain;
  const url = new URL(plain);
  const { httpPort, httpsPort } = config().edge;
  if ((url.port || '80') !== String(httpPort)) return plain; // not the edge's own listener: left as the operator wrote it
  url.protocol = 'https:';
  url.port = httpsPort === 443 ? '' : String(httpsPort);
  return url.href.replace(/\/$/, plain.endsWith('/') ? '/' : '');
}

/**
 * Inspection records HTTP/1.1 exchanges with the target: a share that carries raw TCP streams has none to record,
 * and one that speaks HTTP/2 to its target (gRPC) is not recorded yet; both are refused rather than left silent.
 */
/** Affinity chooses the agent of each HTTP request: a TCP share's connections are spread by weight alone. */
function refuseCookieAffinity(protocol: unknown, affinity: string | undefined): void {
  if (protocol === 'tcp' && affinity && affinity !== 'none') throw badRequest(`property '$.affinity' is for HTTP shares: a TCP share takes only 'none'`);
}

function refuseInspection(share: { protocol?: unknown; targetProtocol?: unknown }, inspect: boolean | undefined): void {
  if (!inspect) return;
  if (share.protocol === 'tcp') throw badRequest(`property '$.inspect' is for HTTP shares: a TCP share carries streams, not requests to record`);
  if (share.targetProtocol === 'h2')
    throw badRequest(`property '$.inspect' is not available for shares with '$.targetProtocol': 'h2' (their exchanges are not recorded)`);
}

/** Why a target does not fit the share's protocol, or undefined. */
function targetRefusal(input: ShareInput): string | undefined {
  const url = new URL(input.target);
  if ((input.protocol ?? 'http') === 'http') {
    return url.protocol === 'tcp:' ? "value for property '$.target' is a tcp:// address: a TCP share needs '$.protocol': 'tcp'" : undefined;
  }
  if (url.protocol !== 'tcp:' || !url.port || (url.pathname !== '' && url.pathname !== '/') || url.search || url.hash || url.username) {
    return "value for property '$.target' must be tcp://HOST:PORT for a TCP share";
  }
  if (input.targetProtocol === 'h2') return "property '$.targetProtocol' is for HTTP shares: a TCP share carries bytes";
  return loginRefusal(input);
}

/** 403 for a target that is one of the service's own endpoints (its address, or what its name resolves to now). */
async function refuseOwnEndpoint(target: string): Promise<void> {
  const url = new URL(target);
  const denied = await egressPolicy().ownEndpointRefusal(url.hostname, Number(url.port));
  if (denied) throw refusal('EH_TARGET_DENIED', `value for property '$.target': ${denied.message}`);
}

/** Why login options cannot go on a TCP share (create or update), or undefined. */
function loginRefusal(input: Pick<ShareInput, 'authProviderId' | 'oauthEmailDomains' | 'oauthAuthorizationCheckInterval'>): string | undefined {
  if (input.authProviderId || input.oauthEmailDomains?.length || input.oauthAuthorizationCheckInterval)
    return "properties '$.authProviderId', '$.oauthEmailDomains' and '$.oauthAuthorizationCheckInterval' are for HTTP shares: a TCP share admits by mutual TLS";
  return undefined;
}

/** The fields of a policy a TCP share may carry: it has connections, not requests. */
const TCP_POLICY_FIELDS = new Set(['ipAllow', 'ipDeny']);

/**
 * The policy to store for a share (passwords hashed), or a 400 naming the field: a TCP share takes IP rules only;
 * basic auth does not go with an auth provider (one login at a time); a user named without a password must be one
 * the share has already.
 */
async function policyFor(
  policy: PolicyInput | null,
  share: { tcp: boolean; authProviderId: string | null | undefined },
  previous: StoredPolicy | null,
): Promise<StoredPolicy | null> {
  if (!policy) return null;
  if (share.tcp) {
    const other = Object.keys(policy).find((k) => !TCP_POLICY_FIELDS.has(k));
    if (other) throw badRequest(`property '$.policy.${other}' is for HTTP shares: a TCP share's policy takes '$.policy.ipAllow' and '$.policy.ipDeny' only`);
  }
  if (policy.basicAuth && share.authProviderId)
    throw badRequest("property '$.policy.basicAuth' cannot go with an auth provider ('$.authProviderId'): a share has one login");
  const stored = await storedPolicy(policy, previous);
  if (stored && 'missingPassword' in stored) {
    const i = policy.basicAuth!.findIndex((u) => u.user === stored.missingPassword);
    throw badRequest(`property '$.policy.basicAuth[${i}].password' is required: the share has no user '${stored.missingPassword}' yet`);
  }
  return stored;
}

/** The lowest port of HUB_EDGE_TCP_PORTS no share holds; the unique constraint on tcp_port settles a race. */
async function freeTcpPort(transaction: Transaction): Promise<number> {
  const { from, to } = config().edge.tcpPorts;
  const rows = await Share.sequelize!.query<{ port: number }>(
    `SELECT p AS port FROM generate_series(CAST(:from AS integer), CAST(:to AS integer)) p
      WHERE NOT EXISTS (SELECT 1 FROM shares WHERE tcp_port = p) ORDER BY p LIMIT 1`,
    { replacements: { from, to }, type: QueryTypes.SELECT, transaction },
  );
  if (!rows.length)
    throw refusal(
      'EH_TCP_PORTS_EXHAUSTED',
      `every port of HUB_EDGE_TCP_PORTS (${from}-${to}) is held by a TCP share: delete one, or give the edge a wider range`,
    );
  return rows[0].port;
}

export async function createShare(hubId: string, input: ShareInput, createdBy: string): Promise<ShareView> {
  const refused = targetRefusal(input);
  if (refused) throw badRequest(refused);
  refuseInspection(input, input.inspect);
  refuseCookieAffinity(input.protocol, input.affinity);
  if (input.tcpIdleTimeout && input.protocol !== 'tcp') throw badRequest(idleTimeoutRefused);
  const policy = await policyFor(input.policy ?? null, { tcp: input.protocol === 'tcp', authProviderId: input.authProviderId }, null);
  for (let attempt = 1; ; attempt++) {
    try {
      return await createShareOnce(hubId, input, createdBy, policy);
    } catch (err) {
      // another create took the same port between our look and our insert: look again
      if (err instanceof UniqueConstraintError && attempt < 10 && JSON.stringify(err.fields ?? {}).includes('tcp_port')) continue;
      throw err;
    }
  }
}

async function createShareOnce(hubId: string, input: ShareInput, createdBy: string, policy: StoredPolicy | null): Promise<ShareView> {
  const frontendIds = [...new Set(input.frontendIds)];
  const frontends = await Frontend.findAll({ where: { ...visibleFrontends(hubId), id: frontendIds } });
  const unknown = frontendIds.filter((id) => !frontends.some((f) => f.id === id));
  if (unknown.length) throw badRequest(`value for property '$.frontendIds' names frontend(s) not available to this hub: ${unknown.join(', ')}`);
  const environment = await Environment.findOne({ where: input.envZId ? { hubId, envZId: input.envZId } : { hubId, isDefault: true } });
  if (input.envZId && !environment) {
    throw badRequest(`value for property '$.envZId' names no environment of this hub: '${input.envZId}'`);
  }
  // a TCP share the edge connects itself (not through agents: their network is theirs) may not aim at the service
  if (input.protocol === 'tcp' && (environment?.reach ?? 'edge') === 'edge') await refuseOwnEndpoint(input.target);
  const authProvider = input.authProviderId ? await AuthProvider.findOne({ where: { hubId, id: input.authProviderId } }) : null;
  if (input.authProviderId && !authProvider)
    throw badRequest(`value for property '$.authProviderId' names no auth provider of this hub: '${input.authProviderId}'`);

  if ((input.oauthEmailDomains?.length || input.oauthAuthorizationCheckInterval) && !authProvider) {
    throw badRequest(`properties '$.oauthEmailDomains' and '$.oauthAuthorizationCheckInterval' need an auth provider ('$.authProviderId')`);
  }

  const primary = frontends.find((f) => f.id === frontendIds[0])!;
  const zId = randomToken(12);
  const tcp = input.protocol === 'tcp';
  return withTransaction(async (transaction) => {
    // the hub's quotas first: its row locked until this share is committed, so a concurrent create counts it
    await reserveShareQuota(hubId, tcp, transaction);
    const tcpPort = tcp ? await freeTcpPort(transaction) : null;
    const share = await Share.create(
      {
        zId,
        hubId,
        envZId: input.envZId ?? (await defaultEnvironmentId(hubId, transaction)),
        name: input.name,
        frontendId: primary.id,
        frontendEndpoint: tcp
          ? `tcp://${new URL(endpointOf(primary.urlTemplate, zId, false)).hostname}:${tcpPort}`
          : endpointOf(primary.urlTemplate, zId, input.mutualTls ?? false),
        target: input.target,
        authProviderId: authProvider?.id ?? null,
        mutualTls: input.mutualTls ?? false,
        inspect: input.inspect ?? false,
        affinity: input.affinity ?? 'none',
        targetProtocol: input.targetProtocol ?? 'http1',
        protocol: input.protocol ?? 'http',
        tcpPort,
        tcpIdleTimeout: (tcp && input.tcpIdleTimeout) || null,
        oauthEmailDomains: input.oauthEmailDomains?.length ? [...new Set(input.oauthEmailDomains.map((d) => d.toLowerCase()))] : null,
        oauthCheckInterval: input.oauthAuthorizationCheckInterval ?? null,
        policy,
        status: 'PROVISIONING',
        createdBy,
      },
      { transaction },
    );
    await ShareFrontend.bulkCreate(
      frontendIds.map((frontendId, position) => ({ shareZId: zId, frontendId, position })),
      { transaction },
    );
    await enqueue({ type: PROVISION_SHARE_JOB, hubId, resourceType: 'share', resourceId: zId, payload: { zId }, createdBy, transaction });
    return { share, frontendIds, authProvider };
  });
}

/**
 * Changes a share's access rules and inspection in one conditional update of its row; the row's trigger tells every
 * edge, which applies them to new requests and asks open connections again (a share made mutual-TLS or given a
 * login drops the clients that no longer qualify). An HTTP share's public address follows mutualTls (TLS listener
 * or not); a TCP share keeps its address and port, and takes no login (400, as on create).
 */
export async function updateShare(hubId: string, zId: string, input: ShareUpdate): Promise<ShareView> {
  const share = await findShare(hubId, zId);
  const tcp = share.get('protocol') === 'tcp';
  refuseInspection({ protocol: share.get('protocol'), targetProtocol: share.get('targetProtocol') }, input.inspect);
  refuseCookieAffinity(share.get('protocol'), input.affinity);
  const login = tcp ? loginRefusal(input) : undefined;
  if (login) throw badRequest(login);
  if (input.tcpIdleTimeout && !tcp) throw badRequest(idleTimeoutRefused);
  const authProviderId = input.authProviderId === undefined ? share.authProviderId : input.authProviderId;
  const authProvider = authProviderId ? await AuthProvider.findOne({ where: { hubId, id: authProviderId } }) : null;
  if (authProviderId && !authProvider) throw badRequest(`value for property '$.authProviderId' names no auth provider of this hub: '${authProviderId}'`);
  const changes: Partial<Share['_attributes']> = {};
  if (input.policy !== undefined) changes.policy = await policyFor(input.policy, { tcp, authProviderId }, share.policy);
  else if (authProviderId && share.policy?.basicAuth)
    throw badRequest("property '$.authProviderId' cannot be set on a share with '$.policy.basicAuth': a share has one login");
  if (input.inspect !== undefined) changes.inspect = input.inspect;
  if (input.affinity !== undefined) changes.affinity = input.affinity;
  if (input.tcpIdleTimeout !== undefined && tcp) changes.tcpIdleTimeout = input.tcpIdleTimeout;
  if (input.authProviderId !== undefined) changes.authProviderId = authProvider?.id ?? null;
  if (input.oauthEmailDomains !== undefined)
    changes.oauthEmailDomains = input.oauthEmailDomains?.length ? [...new Set(input.oauthEmailDomains.map((d) => d.toLowerCase()))] : null;
  if (input.oauthAuthorizationCheckInterval !== undefined) changes.oauthCheckInterval = input.oauthAuthorizationCheckInterval;
  if (!authProvider) {
    // without a login the login options mean nothing: refused when given, cleared when the provider goes
    if (input.oauthEmailDomains?.length || input.oauthAuthorizationCheckInterval) {
      throw badRequest(`properties '$.oauthEmailDomains' and '$.oauthAuthorizationCheckInterval' need an auth provider ('$.authProviderId')`);
    }
    changes.oauthEmailDomains = null;
    changes.oauthCheckInterval = null;
  }
  if (input.mutualTls !== undefined && input.mutualTls !== share.mutualTls) {
    const frontend = await Frontend.findByPk(share.frontendId);
    changes.mutualTls = input.mutualTls;
    // a TCP share keeps its tcp://HOST:PORT (its own port speaks TLS or not); an HTTP share moves between listeners
    if (frontend && !tcp) changes.frontendEndpoint = endpointOf(frontend.urlTemplate, zId, input.mutualTls);
  }
  const [, rows] = await Share.update(changes, { where: { hubId, zId }, returning: true });
  if (!rows.length) throw notFound('share', zId);
  return shareView(rows[0]);
}

/**
 * Deleting the row unpublishes (the edge reads routes from it); the provider clean-up is a job of the same transaction;
 * the share's recorded exchanges are deleted once the row is.
 */
export async function deleteShare(hubId: string, zId: string, deletedBy = 'api'): Promise<void> {
  const share = await findShare(hubId, zId);
  await withTransaction(async (transaction) => {
    await share.destroy({ transaction });
    await enqueueShareCleanup(hubId, zId, deletedBy, transaction);
  });
  await forgetShareRecordings(hubId, zId);
}

/**
 * Job: publishes the share on its frontends and moves PROVISIONING -> ACTIVE. The route is the ACTIVE row itself:
 * its commit notifies every edge process (trigger on shares, channel edgehub_edge), which starts routing its host.
 */
export async function provisionShare(zId: string): Promise<Record<string, unknown>> {
  const share = await Share.findByPk(zId);
  if (!share) return { skipped: 'deleted' };
  if (share.status !== 'PROVISIONING') return { skipped: share.status };
  await frontendHosting().publishShare({ zId, frontendEndpoint: share.frontendEndpoint, target: share.target });
  const [moved] = await Share.update({ status: 'ACTIVE' }, { where: { zId, status: 'PROVISIONING' } });
  return moved ? { status: 'ACTIVE', frontendEndpoint: share.frontendEndpoint } : { skipped: 'no longer PROVISIONING' };
}

export async function failShareProvisioning(zId: string): Promise<void> {
  await Share.update({ status: 'ERROR' }, { where: { zId, status: 'PROVISIONING' } });
}

/** One page of the hub's shares, each with its frontends. */
export async function listShares(hubId: string, req: PageRequest): Promise<Page<ShareView>> {
  const page = await findPage(Share, { hubId }, req);
  return { ...page, content: await shareViews(page.content) };
}
