/** The edge's series (fed by edge/telemetry.ts): requests, bytes and upstream errors by frontend. */
import client from 'prom-client';
import { LATENCY_BUCKETS, registry } from './registry.js';

/** The edge's requests by frontend and status (fed by edge/telemetry.ts). */
export const edgeRequestsTotal = new client.Counter({
  name: 'edgehub_edge_requests_total',
  help: 'Requests the edge answered, by frontend and status',
  labelNames: ['frontend', 'status'] as const,
  registers: [registry],
});
export const edgeRequestDuration = new client.Histogram({
  name: 'edgehub_edge_request_duration_seconds',
  help: 'Edge request duration until the response ended, by frontend and status',
  labelNames: ['frontend', 'status'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const edgeBytesTotal = new client.Counter({
  name: 'edgehub_edge_bytes_total',
  help: 'Bytes the edge carried, by frontend and direction (rx from clients, tx to clients)',
  labelNames: ['frontend', 'direction'] as const,
  registers: [registry],
});

export const edgeUpstreamErrorsTotal = new client.Counter({
  name: 'edgehub_edge_upstream_errors_total',
  help: 'Failures reaching share targets, by frontend and kind (refused, reset, timeout, denied, tls, ...)',
  labelNames: ['frontend', 'kind'] as const,
  registers: [registry],
});

export const inspectRecorded = new client.Counter({
  name: 'edgehub_edge_inspect_recorded_total',
  help: 'Exchanges of inspected shares this edge recorded into Redis',
  registers: [registry],
});

export const inspectDropped = new client.Counter({
  name: 'edgehub_edge_inspect_dropped_total',
  help: 'Exchanges of inspected shares not recorded, by reason (queue_full, redis_unavailable, redis_error; bound_bytes, bound_shares: a bound of the hub or of all hubs left no room): the share never waits for its inspector',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const edgePolicyRefusalsTotal = new client.Counter({
  name: 'edgehub_edge_policy_refusals_total',
  help: "Requests and TCP connections a share's traffic policy refused, by share and reason (ip, rate_limit, basic_auth, maintenance)",
  labelNames: ['share', 'reason'] as const,
  registers: [registry],
});

/** Per agent (fed by edge/agents/figures.ts): what the edge sent each agent of an agent-served environment. */
export const edgeAgentRequestsTotal = new client.Counter({
  name: 'edgehub_edge_agent_requests_total',
  help: 'Requests (and TCP connections) the edge sent through each agent, by agent id (chosen as each is sent)',
  labelNames: ['agent'] as const,
  registers: [registry],
});

export const edgeAgentBytesTotal = new client.Counter({
  name: 'edgehub_edge_agent_bytes_total',
  help: "Bytes on the edge's connections with each agent, by agent id and direction (to_agent, from_agent)",
  labelNames: ['agent', 'direction'] as const,
  registers: [registry],
});

export const edgeAgentErrorsTotal = new client.Counter({
  name: 'edgehub_edge_agent_errors_total',
  help: 'Streams through an agent that reached no target, by agent id and kind (unanswered, unreachable, refused, timeout)',
  labelNames: ['agent', 'kind'] as const,
  registers: [registry],
});
