/**
 * Response schemas of the OpenAPI document: the exact JSON the presenters (api/presenters) produce. Request schemas
 * are not here: the document takes those from the route files themselves (their exported zod schemas).
 * Objects are strict (no extra properties), so a presenter that changes shape fails the contract check of the tests
 * (test/helpers/contract.ts) until the schema here follows it.
 */
import { z } from 'zod';
import 'zod-openapi';

const id = z.string();
const timestamp = z.iso.datetime({ offset: true });
const nullableTimestamp = timestamp.nullable();
const obj = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape);

export const ErrorBody = obj({
  error: z.string().meta({
    description:
      'the kind of error, shared by several refusals: invalid_request, unauthorized, forbidden, not_found, conflict, ... (the `Edgehub-Error-Code` header tells them apart)',
    example: 'not_found',
  }),
  message: z.string().meta({ description: 'what is wrong, for people', example: "no share 'abc' in this hub" }),
}).meta({ id: 'Error', description: 'Every error answer: `{error, message}`, never a stack trace; its code is in the `Edgehub-Error-Code` header.' });

/** A page of `item`s (paged lists: `page`, `size`, `sort` query parameters). */
export const page = <T extends z.ZodType>(item: T, name: string) =>
  obj({
    content: z.array(item),
    pageable: obj({ pageNumber: z.number().int(), pageSize: z.number().int() }),
    totalElements: z.number().int(),
    totalPages: z.number().int(),
  }).meta({ id: `${name}Page` });

export const Hub = obj({
  id,
  name: z.string(),
  features: obj({ ipsec: z.boolean() }),
  quotas: obj({
    shares: z.number().int().meta({ description: 'shares the hub may hold (TCP ones included): its own, or HUB_MAX_SHARES' }),
    tcpPorts: z.number().int().meta({ description: 'TCP shares (each holds one edge port) the hub may hold: its own, or HUB_MAX_TCP_PORTS' }),
  }),
  createdAt: nullableTimestamp,
}).meta({
  id: 'Hub',
  example: { id: 'hb_1a2b3c', name: 'acme', features: { ipsec: true }, quotas: { shares: 1000, tcpPorts: 20 }, createdAt: '2026-01-01T00:00:00.000Z' },
});

export const ApiKey = obj({
  id,
  hubId: id,
  name: z.string(),
  username: z.string(),
  token: z.string().optional().meta({ description: 'shown once, at creation' }),
  createdAt: nullableTimestamp,
  revokedAt: nullableTimestamp.optional(),
}).meta({ id: 'ApiKey' });

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

export const Execution = obj({
  id,
  processId: z.string(),
  hubId: id.nullable(),
  type: z.string(),
  resourceType: z.string().nullable(),
  resourceId: z.string().nullable(),
  status: z.enum(['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED']),
  attempts: z.number().int(),
  error: z.string().nullable(),
  result: z.record(z.string(), z.unknown()).nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  startedAt: nullableTimestamp,
  finishedAt: nullableTimestamp,
}).meta({ id: 'Execution' });

const headerRules = obj({ set: z.record(z.string(), z.string()).optional(), remove: z.array(z.string()).optional() });

/** A share's traffic policy as answers show it: `{}` when none; basic auth users without their passwords. */
export const SharePolicy = obj({
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

export const CertificateRequestToken = obj({
  id,
  name: z.string(),
  hubId: id,
  token: z.string(),
  commonName: z.string().nullable(),
  organization: z.string().nullable(),
  organizationalUnit: z.string().nullable(),
  validYears: z.number().int(),
  expiresAt: nullableTimestamp,
  createdAt: nullableTimestamp,
  createdBy: z.string(),
}).meta({ id: 'CertificateRequestToken' });

export const Deleted = obj({ id, name: z.string(), hubId: id, deletedAt: timestamp, deletedBy: z.string() }).meta({ id: 'Deleted' });

export const EnrollmentJwt = obj({ hubId: id, certificateRequestTokenId: id, jwt: z.string(), url: z.string(), expiresAt: nullableTimestamp }).meta({
  id: 'EnrollmentJwt',
});

const certificateSummaryShape = { id, name: z.string(), hubId: id, createdAt: nullableTimestamp, createdBy: z.string() };
export const ClientCertificateSummary = obj(certificateSummaryShape).meta({ id: 'ClientCertificateSummary' });
export const ClientCertificate = obj({
  ...certificateSummaryShape,
  value: z.string().meta({ description: 'the certificate, PEM' }),
  chain: z.string().nullable().meta({ description: 'its issuing certificates, PEM' }),
  subject: z.string(),
  fingerprintSha256: z.string(),
  serialNumber: z.string(),
  notBefore: nullableTimestamp,
  notAfter: nullableTimestamp,
}).meta({ id: 'ClientCertificate' });

export const EnrollmentViolations = z
  .array(z.unknown())
  .meta({ id: 'EnrollmentViolations', description: 'with `X-Validate: true`: what an enrollment would refuse (empty when it would succeed)' });

export const AuthProvider = obj({
  id,
  hubId: id,
  name: z.string(),
  type: z.string(),
  config: obj({ clientId: z.string(), issuerUrl: z.string().nullable().optional(), scopes: z.array(z.string()) }),
  emailPatterns: z.array(z.string()),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'AuthProvider', description: '`config.clientSecret` is write-only and never returned.' });

export const CustomFrontend = obj({
  id,
  hubId: id,
  hostname: z.string(),
  domainName: z.string(),
  frontendId: id,
  status: z.string(),
  authProviderIds: z.array(id),
  statusMessage: z.string().optional(),
  certificateExpiresAt: timestamp.optional(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
}).meta({ id: 'CustomFrontend' });

export const DnsRecords = obj({
  hubId: id,
  customFrontendId: id,
  domainName: z.string(),
  aRecord: obj({ name: z.string(), ipAddress: z.array(z.string()) }),
  cnameRecords: z.array(obj({ name: z.string(), value: z.string() })),
}).meta({ id: 'DnsRecords' });

export const HealthCheck = obj({
  id,
  hubId: id,
  name: z.string(),
  method: z.string(),
  path: z.string(),
  expectedStatus: z.number().int(),
  target: z.string().nullable(),
  timeoutMs: z.number().int(),
  intervalSeconds: z.number().int(),
  enabled: z.boolean(),
  lastResult: obj({
    result: z.string().nullable(),
    status: z.number().int().nullable(),
    latencyMs: z.number().nullable(),
    message: z.string().nullable(),
    executedAt: nullableTimestamp,
  }).nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'HealthCheck' });

export const HealthCheckResult = obj({
  healthCheckId: id.nullable(),
  result: z.enum(['SUCCESS', 'FAILURE', 'TIMEOUT', 'ERROR']),
  status: z.number().int().nullable(),
  latencyMs: z.number().nullable(),
  message: z.string().optional(),
  executedAt: nullableTimestamp,
  executionId: id.optional(),
}).meta({ id: 'HealthCheckResult' });

const UsagePoint = obj({ rx: z.number(), tx: z.number(), timestamp: z.string() });
export const MetricSeries = obj({
  hubId: id,
  scope: z.string(),
  id,
  shareToken: z.string().optional(),
  envZId: z.string().optional(),
  period: z.string().meta({ description: 'the window, ISO 8601', example: 'PT1H' }),
  samples: z.array(UsagePoint),
}).meta({ id: 'MetricSeries' });

export const Sparklines = obj({
  hubId: id,
  sparklines: z.array(obj({ scope: z.string(), id, period: z.string(), samples: z.array(UsagePoint) })),
  pageable: obj({ pageNumber: z.number().int(), pageSize: z.number().int() }),
  totalElements: z.number().int(),
  totalPages: z.number().int(),
  maxPageSize: z.number().int().meta({ description: 'the most shares one response carries (HUB_SPARKLINES_MAX_SHARES); page through the rest' }),
}).meta({ id: 'Sparklines' });

export const IpsecTunnel = obj({
  id,
  name: z.string(),
  hubId: id,
  locationId: z.string().nullable(),
  status: z.string(),
  statusMessage: z.string().nullable(),
  peerPublicIp: z.string(),
  peerCidr: z.string(),
  nlbPrivateIp: z.string(),
  nlbDnsName: z.string().nullable(),
  vpnConnectionId: z.string().nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'IpsecTunnel', description: 'Provisioned fields are empty until DEPLOYED; the pre-shared key never appears.' });

export const IpsecShare = obj({
  id,
  name: z.string(),
  hubId: id,
  ipsecTunnelId: id,
  envZId: id,
  target: z.string(),
  ingressPort: z.number().int(),
  locationId: z.string().nullable(),
  status: z.string(),
  statusMessage: z.string().nullable(),
  createdAt: nullableTimestamp,
  createdBy: z.string(),
  updatedAt: nullableTimestamp,
}).meta({ id: 'IpsecShare' });

export const TunnelConfig = obj({
  state: z.string(),
  tunnels: z.array(
    obj({
      outsideIpAddress: z.string(),
      status: z.string(),
      statusMessage: z.string(),
      insideCidr: z.string(),
      ikeVersions: z.array(z.string()),
      phase1EncryptionAlgorithms: z.array(z.string()),
      phase1IntegrityAlgorithms: z.array(z.string()),
      phase1DHGroupNumbers: z.array(z.number()),
      phase1LifetimeSeconds: z.number(),
      phase2EncryptionAlgorithms: z.array(z.string()),
      phase2IntegrityAlgorithms: z.array(z.string()),
      phase2DHGroupNumbers: z.array(z.number()),
      phase2LifetimeSeconds: z.number(),
      rekeyMarginTimeSeconds: z.number(),
      rekeyFuzzPercentage: z.number(),
      dpdTimeoutSeconds: z.number(),
      dpdTimeoutAction: z.string(),
    }),
  ),
}).meta({ id: 'TunnelConfig' });

export const Jwks = obj({ keys: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'Jwks' });

export const Health = z
  .union([obj({ status: z.literal('ok') }), obj({ status: z.literal('unavailable'), postgres: z.string(), redis: z.string() })])
  .meta({ id: 'Health' });

export const UsageAccepted = obj({ accepted: z.number().int() }).meta({ id: 'UsageAccepted' });

export const RotatedKey = obj({ kid: z.string(), previousKid: z.string() }).meta({ id: 'RotatedKey' });

export const RevokedKey = obj({ kid: z.string(), status: z.literal('REVOKED'), revokedAt: timestamp, activeKid: z.string() }).meta({
  id: 'RevokedKey',
  description: 'The key left the JWKS and its JWTs stop working; a new active key took over when the revoked one was active.',
});

// ---- request bodies of routes that validate by hand (no zod schema in the route file to reuse) ----

export const UsageRequest = obj({
  samples: z.array(
    z.object({
      hubId: id,
      shareId: id.optional(),
      envZId: id.optional(),
      rx: z.number().int().min(0),
      tx: z.number().int().min(0),
      timestamp: timestamp,
    }),
  ),
}).meta({ id: 'UsageRequest', description: 'A bad sample rejects the whole batch.' });

/** Request inspection: one recorded exchange as lists show it. */
export const InspectedExchange = obj({
  id: id.meta({ description: 'the exchange id (a Redis stream entry id)' }),
  at: timestamp.meta({ description: 'when the request reached the edge' }),
  method: z.string(),
  path: z.string().meta({ description: 'path and query as the client sent them' }),
  status: z.number().int().meta({ description: "the answer's status (499: the client left before an answer)" }),
  ms: z.number().meta({ description: 'from the request reaching the edge to the end of the answer' }),
  rxBytes: z.number().int(),
  txBytes: z.number().int(),
  clientAddress: z.string(),
  edge: z.string().meta({ description: 'the edge process that carried it' }),
  replayOf: id.optional().meta({ description: 'for a replay: the exchange it sent again' }),
}).meta({ id: 'InspectedExchange' });

const RecordedMessage = obj({
  headers: z.array(z.tuple([z.string(), z.string()])).meta({ description: "[name, value] pairs; credentials and the client certificate as '[redacted]'" }),
  body: z.string().meta({ description: 'base64 of the first HUB_INSPECT_BODY_BYTES bytes' }),
  bodyTruncated: z.boolean(),
});

export const InspectedExchangeDetail = obj({
  ...InspectedExchange.shape,
  request: RecordedMessage,
  response: RecordedMessage,
}).meta({ id: 'InspectedExchangeDetail' });
