import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { createShare, deleteShare, getIpsecShare, listIpsecShares, updateShare, type ShareInput } from '../../domain/commands/ipsecShares.js';
import { IPSEC_STATUSES } from '../../domain/commands/ipsecStates.js';
import { createTunnel, deleteTunnel, getTunnel, listTunnels, preSharedKeyFor, tunnelConfiguration, type Accepted } from '../../domain/commands/ipsecTunnels.js';
import { config } from '../../shared/config.js';
import { badRequest, refusal } from '../../shared/errors.js';
import { HttpError } from '../httpError.js';
import { hostPortProblem, parseCidr, parseIpv4, publicUnicastProblem } from '../../shared/ipsec/addresses.js';
import { principalName } from '../middleware/auth.js';
import { mapPage, pageRequest } from '../paging.js';
import { presentShare, presentTunnel, presentTunnelConfig, SAMPLE_CONFIG_VENDORS } from '../presenters/ipsec.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';
import { body, fields, single } from '../validate.js';

/** Every IPsec route passes this gate: hubs without the IPsec feature are refused (403 not_found, as for a hub without access). */
const requireIpsec: Middleware = async (ctx, next) => {
  if (!currentHub(ctx).features?.ipsec) throw refusal('EH_FEATURE_DISABLED', 'IPsec is not enabled for this hub');
  await next();
};

// ---- input schemas ----

/** A string checked by `problem` (undefined = fine), reported as "value for property '$.x' is invalid: <problem>". */
const checked = (problem: (v: string) => string | undefined) =>
  z.string().superRefine((value, issue) => {
    const why = problem(value);
    if (why) issue.addIssue({ code: 'custom', message: why });
  });

const optionalText = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').nullish();
const blankAsAbsent = (v: unknown) => (v === '' ? undefined : v);

export const createTunnelSchema = z.object({
  name: fields.name,
  peerPublicIp: checked(publicUnicastProblem),
  peerCidr: checked((v) => {
    const parsed = parseCidr(v);
    return typeof parsed === 'string' ? parsed : undefined;
  }),
  locationId: optionalText,
  nlbPrivateIp: z.preprocess(blankAsAbsent, checked((v) => (parseIpv4(v) === undefined ? 'must be an IPv4 address' : undefined)).nullish()),
});

const shareFields = {
  name: z.string().regex(/^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/, 'must be 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen'),
  ipsecTunnelId: z.string().min(1, 'must not be empty'),
  envZId: z.string().min(1, 'must not be empty'),
  envId: z.string().min(1, 'must not be empty'),
  target: checked(hostPortProblem),
  ingressPort: z.number().min(1, 'must be between 1 and 65535').max(65535, 'must be between 1 and 65535').refine(Number.isInteger, 'must be an integer'),
  locationId: optionalText,
};

/** `envId` is accepted for `envZId`; both given must agree. */
function environmentOf(input: { envZId?: string; envId?: string }): string | undefined {
  if (input.envZId !== undefined && input.envId !== undefined && input.envZId !== input.envId) {
    throw badRequest("properties '$.envZId' and '$.envId' (its alias) disagree; give one of them");
  }
  return input.envZId ?? input.envId;
}

export const fullShareSchema = z.object({ ...shareFields, envZId: shareFields.envZId.optional(), envId: shareFields.envId.optional() });
export const partialShareSchema = z.object(shareFields).partial();

function fullShareInput(ctx: Context): ShareInput {
  const input = body(ctx, fullShareSchema);
  const envZId = environmentOf(input);
  if (envZId === undefined) throw badRequest("property '$.envZId' is required and must be of type string (envId is accepted as an alias)");
  return {
    name: input.name,
    ipsecTunnelId: input.ipsecTunnelId,
    envZId,
    target: input.target,
    ingressPort: input.ingressPort,
    locationId: input.locationId ?? null,
  };
}

function partialShareInput(ctx: Context): Partial<ShareInput> {
  const input = body(ctx, partialShareSchema);
  const changes: Partial<ShareInput> = {
    name: input.name,
    ipsecTunnelId: input.ipsecTunnelId,
    envZId: environmentOf(input),
    target: input.target,
    ingressPort: input.ingressPort,
    locationId: input.locationId,
  };
  for (const key of Object.keys(changes) as (keyof ShareInput)[]) if (changes[key] === undefined) delete changes[key];
  if (Object.keys(changes).length === 0) {
    throw badRequest('PATCH needs at least one of name, ipsecTunnelId, envZId, target, ingressPort, locationId');
  }
  return changes;
}

// ---- list filters ----

interface Filter {
  attribute: string;
  parse?: (value: string, key: string) => unknown;
}

const statusValue = (value: string, key: string) => {
  if (!(IPSEC_STATUSES as readonly string[]).includes(value)) {
    throw badRequest(`value for query parameter '${key}' must be one of ${IPSEC_STATUSES.join(', ')} (got '${value}')`);
  }
  return value;
};
const portValue = (value: string, key: string) => {
  if (!/^\d{1,5}$/.test(value)) throw badRequest(`value for query parameter '${key}' must be of type integer`);
  return Number(value);
};

const PAGING_PARAMETERS = new Set(['page', 'size', 'sort']);

/**
 * Equality filters on any property (attribute -> values); a repeated parameter matches any of its values
 * (status=NEW&status=DEPLOYED). The command leaves DELETED rows out unless a status filter asks for them.
 */
function filters(ctx: Context, filterable: Record<string, Filter>): Record<string, unknown[]> {
  const where: Record<string, unknown[]> = {};
  for (const [key, raw] of Object.entries(ctx.query)) {
    if (PAGING_PARAMETERS.has(key) || raw === undefined) continue;
    const filter = filterable[key];
    if (!filter) throw badRequest(`cannot filter by '${key}'; filterable properties: ${Object.keys(filterable).join(', ')}`);
    const values = (Array.isArray(raw) ? raw : [raw]).map((v) => (filter.parse ? filter.parse(v, key) : v));
    where[filter.attribute] = [...(where[filter.attribute] ?? []), ...values];
  }
  return where;
}

const plain = (attribute: string): Filter => ({ attribute });

const TUNNEL_FILTERS: Record<string, Filter> = {
  id: plain('id'),
  name: plain('name'),
  hubId: plain('hubId'),
  locationId: plain('locationId'),
  status: { attribute: 'status', parse: statusValue },
  peerPublicIp: plain('peerPublicIp'),
  peerCidr: plain('peerCidr'),
  nlbPrivateIp: plain('nlbPrivateIp'),
  nlbDnsName: plain('nlbDnsName'),
  vpnConnectionId: plain('vpnConnectionId'),
};
const TUNNEL_SORTABLE = [...Object.keys(TUNNEL_FILTERS), 'createdAt', 'updatedAt'];

const SHARE_FILTERS: Record<string, Filter> = {
  id: plain('id'),
  name: plain('name'),
  hubId: plain('hubId'),
  ipsecTunnelId: plain('ipsecTunnelId'),
  envZId: plain('envZId'),
  envId: plain('envZId'),
  target: plain('target'),
  ingressPort: { attribute: 'ingressPort', parse: portValue },
  locationId: plain('locationId'),
  status: { attribute: 'status', parse: statusValue },
};
const SHARE_SORTABLE = [...Object.keys(SHARE_FILTERS).filter((k) => k !== 'envId'), 'createdAt', 'updatedAt'];

/** 202 with the resource at its new state; Location names the execution that carries the work on. */
function accepted<T>(ctx: Context, { resource, execution }: Accepted<T>, present: (r: T) => unknown): void {
  ctx.status = 202;
  ctx.set('Location', `/hub/${currentHub(ctx).id}/executions/${execution.id}`);
  ctx.body = present(resource);
}

export default function routes({ hub }: Routes) {
  const tunnels = '/ipsec-tunnels';
  const shares = '/ipsec-shares';

  hub.post(tunnels, requireIpsec, async (ctx) => {
    const input = body(ctx, createTunnelSchema);
    accepted(ctx, await createTunnel(currentHub(ctx), input, principalName(ctx)), presentTunnel);
  });
  hub.get(tunnels, requireIpsec, async (ctx) => {
    ctx.body = mapPage(await listTunnels(currentHub(ctx).id, filters(ctx, TUNNEL_FILTERS), pageRequest(ctx, TUNNEL_SORTABLE)), presentTunnel);
  });
  hub.get(`${tunnels}/:id`, requireIpsec, async (ctx) => {
    ctx.body = presentTunnel(await getTunnel(currentHub(ctx).id, ctx.params.id));
  });
  hub.delete(`${tunnels}/:id`, requireIpsec, async (ctx) => {
    accepted(ctx, await deleteTunnel(currentHub(ctx), ctx.params.id, principalName(ctx)), presentTunnel);
  });
  hub.get(`${tunnels}/:id/tunnel-config`, requireIpsec, async (ctx) => {
    const { tunnel, status } = await tunnelConfiguration(await getTunnel(currentHub(ctx).id, ctx.params.id));
    ctx.body = presentTunnelConfig(tunnel, status);
  });
  hub.get(`${tunnels}/:id/sample-config`, requireIpsec, async (ctx) => {
    if (!ctx.accepts('text/plain')) throw new HttpError('EH_NOT_ACCEPTABLE', 'the sample configuration is text/plain: send Accept: text/plain');
    const vendor = String(single(ctx.query.vendor) ?? 'strongswan').toLowerCase();
    const render = SAMPLE_CONFIG_VENDORS[vendor as keyof typeof SAMPLE_CONFIG_VENDORS];
    if (!render) throw badRequest(`value for query parameter 'vendor' must be one of ${Object.keys(SAMPLE_CONFIG_VENDORS).join(', ')}`);
    const tunnel = await getTunnel(currentHub(ctx).id, ctx.params.id);
    const preSharedKey = preSharedKeyFor(tunnel);
    ctx.type = 'text/plain; charset=utf-8';
    ctx.set('Cache-Control', 'no-store'); // it carries the pre-shared key
    ctx.body = render(tunnel, preSharedKey, config().vpcCidr);
  });

  hub.post(shares, requireIpsec, async (ctx) => {
    const input = fullShareInput(ctx);
    accepted(ctx, await createShare(currentHub(ctx), input, principalName(ctx)), presentShare);
  });
  hub.get(shares, requireIpsec, async (ctx) => {
    ctx.body = mapPage(await listIpsecShares(currentHub(ctx).id, filters(ctx, SHARE_FILTERS), pageRequest(ctx, SHARE_SORTABLE)), presentShare);
  });
  hub.get(`${shares}/:id`, requireIpsec, async (ctx) => {
    ctx.body = presentShare(await getIpsecShare(currentHub(ctx).id, ctx.params.id));
  });
  hub.put(`${shares}/:id`, requireIpsec, async (ctx) => {
    const input = fullShareInput(ctx);
    accepted(ctx, await updateShare(currentHub(ctx), ctx.params.id, input, principalName(ctx)), presentShare);
  });
  hub.patch(`${shares}/:id`, requireIpsec, async (ctx) => {
    const changes = partialShareInput(ctx);
    accepted(ctx, await updateShare(currentHub(ctx), ctx.params.id, changes, principalName(ctx)), presentShare);
  });
  hub.delete(`${shares}/:id`, requireIpsec, async (ctx) => {
    accepted(ctx, await deleteShare(currentHub(ctx), ctx.params.id, principalName(ctx)), presentShare);
  });
}
