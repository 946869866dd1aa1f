/**
 * A share's stored policy (shared/sharePolicy.ts) as the edge applies it: made once when the route is loaded (edge/
 * routes.ts, edge/tcp/shares.ts), never per request. IP lists become CIDR sets searched in logarithmic time, the rate
 * limit its points and window, basic auth its users, header rules their name sets.
 */
import { durationMs } from '../../shared/durations.js';
import type { StoredPolicy } from '../../shared/sharePolicy.js';
import { BasicAuth } from './basicauth.js';
import { CidrSet } from './cidr.js';
import { type CompiledHeaderRules, compileHeaderRules } from './headers.js';

export interface CompiledPolicy {
  allow?: CidrSet;
  deny?: CidrSet;
  rate?: { points: number; seconds: number; by: 'client-ip' | 'identity' };
  basicAuth?: BasicAuth;
  requestHeaders?: CompiledHeaderRules;
  responseHeaders?: CompiledHeaderRules;
  /** The bodies (HTML) of the edge's own 502, 503 and 504 for the share. */
  errorPages?: Partial<Record<number, string>>;
  maintenance: boolean;
}

/** The compiled policy, or undefined when the share has none (the request path then checks nothing). */
export function compilePolicy(stored: StoredPolicy | null | undefined): CompiledPolicy | undefined {
  if (!stored || !Object.keys(stored).length) return undefined;
  const out: CompiledPolicy = { maintenance: stored.maintenance === true };
  if (stored.ipAllow?.length) out.allow = new CidrSet(stored.ipAllow);
  if (stored.ipDeny?.length) out.deny = new CidrSet(stored.ipDeny);
  if (stored.rateLimit) {
    const ms = durationMs(stored.rateLimit.per) ?? 60_000;
    out.rate = { points: stored.rateLimit.requests, seconds: Math.max(1, Math.ceil(ms / 1000)), by: stored.rateLimit.by ?? 'client-ip' };
  }
  if (stored.basicAuth?.length) out.basicAuth = new BasicAuth(stored.basicAuth);
  // the credentials are the edge's: the target does not see them
  out.requestHeaders = compileHeaderRules(stored.requestHeaders, out.basicAuth ? ['authorization'] : []);
  out.responseHeaders = compileHeaderRules(stored.responseHeaders);
  if (stored.errorPages && Object.keys(stored.errorPages).length) {
    out.errorPages = {};
    for (const [status, page] of Object.entries(stored.errorPages)) if (typeof page === 'string') out.errorPages[Number(status)] = page;
  }
  return out;
}

/** Whether the IP rules admit `address`: not in `deny`, and in `allow` when there is one. */
export function ipAdmits(policy: CompiledPolicy, address: string): boolean {
  if (policy.deny?.has(address)) return false;
  return policy.allow ? policy.allow.has(address) : true;
}
