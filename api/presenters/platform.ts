import type { ApiKey } from '../../domain/models/ApiKey.js';
import type { Environment } from '../../domain/models/Environment.js';
import type { Execution } from '../../domain/models/Execution.js';
import type { Frontend } from '../../domain/models/Frontend.js';
import type { Hub } from '../../domain/models/Hub.js';
import { hubQuotas } from '../../domain/commands/hubQuotas.js';

export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** `quotas`: what the hub may hold, its own where the operator set them, else the service's defaults. */
export const presentHub = (h: Hub) => ({
  id: h.id,
  name: h.name,
  features: { ipsec: Boolean(h.features?.ipsec) },
  quotas: hubQuotas(h.quotas),
  createdAt: iso(h.createdAt),
});

/** The token is shown once, at creation; it is passed in because only its hash is stored. */
export const presentApiKey = (k: ApiKey, token?: string) => ({
  id: k.id,
  hubId: k.hubId,
  name: k.name,
  username: k.username,
  ...(token === undefined ? {} : { token }),
  createdAt: iso(k.createdAt),
  ...(k.revokedAt ? { revokedAt: iso(k.revokedAt) } : {}),
});

export const presentEnvironment = (e: Environment) => ({
  envZId: e.envZId,
  hubId: e.hubId,
  description: e.description,
  default: e.isDefault,
  reach: e.reach,
  createdAt: iso(e.createdAt),
  createdBy: e.createdBy,
});

export const presentFrontend = (f: Frontend) => ({ id: f.id, urlTemplate: f.urlTemplate, publicName: f.publicName });

/** `result` is what the job returned (never a secret; see ProcessorDefinition.handle); `payload` stays internal. */
export const presentExecution = (e: Execution) => ({
  id: e.id,
  processId: e.processId,
  hubId: e.hubId,
  type: e.type,
  resourceType: e.resourceType,
  resourceId: e.resourceId,
  status: e.status,
  attempts: e.attempts,
  error: e.error,
  result: e.result ?? null,
  createdAt: iso(e.createdAt),
  createdBy: e.createdBy,
  startedAt: iso(e.startedAt),
  finishedAt: iso(e.finishedAt),
});
