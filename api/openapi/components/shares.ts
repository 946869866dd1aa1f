/** Shares, their environments and agents, their frontends and traffic policy. */
import { z } from 'zod';
import { id, nullableTimestamp, obj } from './base.js';

export const Frontend = obj({ id, urlTemplate: z.string(), publicName: z.string() }).meta({
  id: 'Frontend',
  example: { id: 'fe_public', urlTemplate: 'https://{token}.share.example.com', publicName: 'public' },
});

export const Agent = obj({
  id,
  createdAt: nullableTimestamp,
  connected: z.boolean().meta({ description: 'connected to at least one edge now' }),
  connectedAt: nullableTimestamp,
  lastSeenAt: nullableTimestamp,
  edges: z.array(z.string()).meta({ description: 'the edges it is connected to' }),
  weight: z
    .number()
    .int()
    .min(1)
    .max(100)
    .meta({ description: "its share of the environment's new requests against its peers' (`edgehub agent run --weight`; 1 while not connected)" }),
  priority: z.number().int().min(0).max(9).meta({
    description: 'lower is preferred: agents of a higher number take requests only when none of a lower is usable (`--priority`; 0 while not connected)',
  }),
  draining: z.boolean().meta({ description: 'draining: it takes no new requests and stops once those in flight finish' }),
  targetsDown: z.array(z.string()).meta({ description: 'ids of the shares whose target it reports it cannot reach' }),
}).meta({ id: 'Agent' });

export const AgentEnrollment = obj({ envZId: id, hubId: id, jwt: z.string(), url: z.string(), expiresAt: nullableTimestamp }).meta({ id: 'AgentEnrollment' });

export const AgentIdentity = obj({
  id,
  hubId: id,
  envZId: id,
  certificate: z.string().meta({ description: "the agent's certificate (PEM) with the hub's issuing CA and root" }),
  edgeCa: z.string().meta({ description: "the CA that signs the edge's certificates (PEM)" }),
  edgeServerName: z.string().meta({ description: 'the TLS server name to send when dialling an edge' }),
  edges: z.array(z.string()).meta({ description: 'edge addresses (host:port) to dial' }),
  createdAt: nullableTimestamp,
}).meta({ id: 'AgentIdentity' });

export const Environment = obj({
  envZId: id,
  hubId: id,
  description: z.string(),
  default: z.boolean().meta({ description: "the hub's default environment: shares created without an envZId belong to it" }),
  reach: z.enum(['agent', 'edge']).meta({
    description:
      "'agent': its shares are served only through its connected agents (502 when none is connected; set by the first agent enrollment, changed back only by PATCH); 'edge': the edge connects to its targets itself",
  }),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  agents: z.array(Agent).optional().meta({ description: "the environment's agents (on GET of one environment)" }),
}).meta({ id: 'Environment' });

const headerRules = obj({ set: z.record(z.string(), z.string()).optional(), remove: z.array(z.string()).optional() });

/** A share's traffic policy as answers show it: `{}` when none; basic auth users without their passwords. */
const SharePolicy = obj({
  ipAllow: z.array(z.string()).optional().meta({ description: 'CIDRs (IPv4, IPv6) a client address must be in (403 otherwise)' }),
  ipDeny: z.array(z.string()).optional().meta({ description: 'CIDRs whose client addresses get 403; deny wins over allow' }),
  rateLimit: obj({ requests: z.number().int(), per: z.string(), by: z.enum(['client-ip', 'identity']) })
    .optional()
    .meta({
      description: 'at most `requests` per `per` (ISO 8601 duration) per client address or identity, counted across every edge; 429 with Retry-After past it',
    }),
  basicAuth: z
    .array(obj({ user: z.string() }))
    .optional()
    .meta({ description: 'users admitted by HTTP Basic credentials (401 otherwise); passwords are never shown' }),
  requestHeaders: headerRules.optional().meta({ description: 'headers set on and removed from the request to the target' }),
  responseHeaders: headerRules.optional().meta({ description: 'headers set on and removed from the answer to the client' }),
  errorPages: obj({ '502': z.string().optional(), '503': z.string().optional(), '504': z.string().optional() })
    .optional()
    .meta({ description: 'HTML bodies (at most 64 KiB) the edge answers instead of its own for 502, 503 and 504' }),
  maintenance: z.boolean().optional().meta({ description: 'every request is answered 503 (with the 503 page) without contacting the target' }),
}).meta({ id: 'SharePolicy' });

export const Share = obj({
  zId: id,
  hubId: id,
  name: z.string(),
  status: z.string(),
  authProviderId: id.nullable(),
  frontendId: id.nullable(),
  frontendIds: z.array(id),
  shareMode: z.string(),
  backendMode: z.string(),
  envZId: id.nullable(),
  frontendSelection: z.string().nullable(),
  frontendEndpoint: z.string().nullable(),
  backendProxyEndpoint: z.string(),
  oauthProvider: z.string().nullable(),
  oauthEmailDomains: z.array(z.string()).nullable(),
  oauthAuthorizationCheckInterval: z
    .string()
    .nullable()
    .meta({ description: 'ISO 8601 duration after which a login session is checked again (PT3H unless the share sets it); null without an auth provider' }),
  mutualTls: z.boolean().meta({ description: 'served only over TLS to clients presenting a client certificate of the hub' }),
  inspect: z.boolean().meta({ description: 'exchanges are recorded for the request inspector (GET .../requests)' }),
  affinity: z.enum(['none', 'client-ip', 'cookie']).meta({
    description:
      "which agent of an agent-served environment carries a client's requests: 'none' (spread by weight), 'client-ip' (by the client's address) or 'cookie' (a signed cookie edgehub_affinity naming the agent); HTTP shares only; a client moves when its agent is no longer usable",
  }),
  protocol: z.enum(['http', 'tcp']).meta({ description: "'http' (routed by host) or 'tcp' (a port of HUB_EDGE_TCP_PORTS; frontendEndpoint tcp://HOST:PORT)" }),
  tcpIdleTimeout: z.string().nullable().meta({
    description:
      "a TCP share's connection with no byte either way for this ISO 8601 duration is closed; null: the edge's HUB_EDGE_TCP_IDLE_TIMEOUT (PT10M unless set), and always null for an HTTP share",
  }),
  targetProtocol: z.enum(['http1', 'h2']).meta({
    description:
      "what the edge speaks to the target: 'http1' (HTTP/1.1) or 'h2' (HTTP/2: TLS with ALPN for https targets, prior knowledge for http targets; gRPC)",
  }),
  policy: SharePolicy,
  reserved: z.boolean(),
  limited: z.boolean(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
}).meta({ id: 'Share' });
