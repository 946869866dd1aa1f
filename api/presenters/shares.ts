import type { ShareView } from '../../domain/commands/shares.js';
import { policyView } from '../../shared/sharePolicy.js';
import { iso } from './platform.js';

/** A login session is checked again after this long unless the share says otherwise. */
const DEFAULT_CHECK_INTERVAL = 'PT3H';

/** Email patterns `*@example.com` as the domains they admit. */
const emailDomains = (patterns: string[]) => [...new Set(patterns.map((p) => p.slice(p.lastIndexOf('@') + 1)))];

export const presentShare = ({ share: s, frontendIds, authProvider }: ShareView) => ({
  zId: s.zId,
  hubId: s.hubId,
  name: s.name,
  status: s.status,
  authProviderId: s.authProviderId,
  frontendId: s.frontendId,
  frontendIds,
  shareMode: s.shareMode,
  backendMode: s.backendMode,
  envZId: s.envZId,
  frontendSelection: s.frontendSelection,
  frontendEndpoint: s.frontendEndpoint,
  backendProxyEndpoint: s.target,
  oauthProvider: authProvider ? authProvider.type.toLowerCase() : null,
  // the share's own restriction when set, else the domains its provider's patterns admit
  oauthEmailDomains: s.oauthEmailDomains ?? (authProvider && authProvider.emailPatterns.length ? emailDomains(authProvider.emailPatterns) : null),
  oauthAuthorizationCheckInterval: authProvider ? (s.oauthCheckInterval ?? DEFAULT_CHECK_INTERVAL) : null,
  mutualTls: s.mutualTls,
  inspect: s.inspect,
  affinity: s.affinity,
  targetProtocol: s.targetProtocol,
  protocol: s.protocol,
  tcpIdleTimeout: s.tcpIdleTimeout ?? null,
  // `{}` when none; basic auth users without their password hashes
  policy: policyView(s.policy),
  reserved: s.reserved,
  limited: s.limited,
  createdAt: iso(s.createdAt),
  createdBy: s.createdBy,
});
