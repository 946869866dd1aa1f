import type { AgentEnrollment, AgentIdentity, AgentState } from '../../domain/commands/agents.js';
import { iso } from './platform.js';

export const presentAgent = (a: AgentState) => ({
  id: a.id,
  createdAt: iso(a.createdAt),
  connected: a.connected,
  connectedAt: iso(a.connectedAt),
  lastSeenAt: iso(a.lastSeenAt),
  edges: a.edges,
  weight: a.weight,
  priority: a.priority,
  draining: a.draining,
  targetsDown: a.targetsDown,
});

export const presentAgentEnrollment = (e: AgentEnrollment) => ({ envZId: e.envZId, hubId: e.hubId, jwt: e.jwt, url: e.url, expiresAt: iso(e.expiresAt) });

/** What `edgehub agent enroll` writes: the certificate with its chain, what to trust and where to dial. */
export const presentAgentIdentity = (a: AgentIdentity) => ({
  id: a.id,
  hubId: a.hubId,
  envZId: a.envZId,
  certificate: a.certificatePem,
  edgeCa: a.edgeCaPem,
  edgeServerName: a.edgeServerName,
  edges: a.edges,
  createdAt: iso(a.createdAt),
});
