import type { AuthProvider } from '../../domain/models/AuthProvider.js';
import { iso } from './platform.js';

/** The client secret is write-only: never part of the answer. */
export const presentAuthProvider = (p: AuthProvider) => ({
  id: p.id,
  hubId: p.hubId,
  name: p.name,
  type: p.type,
  config: {
    clientId: p.clientId,
    ...(p.type === 'OIDC' ? { issuerUrl: p.issuerUrl } : {}),
    scopes: p.scopes,
  },
  emailPatterns: p.emailPatterns,
  createdAt: iso(p.createdAt),
  createdBy: p.createdBy,
  updatedAt: iso(p.updatedAt),
});
