/**
 * The one place a share's policy judges a request (HTTP/1.1, HTTP/2 and upgrades alike; the admission pipeline's
 * policy step, edge/pipeline/policy.ts, calls it before the share's other access rules), in this order: the IP rules,
 * the rate limit, basic auth, maintenance. A rate limit by identity is counted once the identity is known, after
 * mutual TLS and login (limitIdentity).
 * Answers synchronously when it can (no rate limit, a client already refused, a remembered basic auth verdict).
 */
import type { IncomingMessage } from 'node:http';
import type { ErrorCode } from '../../shared/errors.js';
import type { ShareRoute } from '../types.js';
import type { ClientAddress } from './clientAddress.js';
import { type CompiledPolicy, ipAdmits } from './compile.js';
import type { PolicyRateLimiter } from './ratelimit.js';

export type RefusalReason = 'ip' | 'rate_limit' | 'basic_auth' | 'maintenance';

interface PolicyRefusal {
  code: ErrorCode;
  message: string;
  reason: RefusalReason;
  headers?: Record<string, string>;
}

type Verdict = PolicyRefusal | undefined;

const basicAuthRefusal: PolicyRefusal = {
  code: 'EH_POLICY_AUTH_REQUIRED',
  message: 'this share requires a user name and password (HTTP Basic authentication)',
  reason: 'basic_auth',
  headers: { 'www-authenticate': 'Basic realm="edgehub"' },
};
const maintenance: PolicyRefusal = { code: 'EH_SHARE_MAINTENANCE', message: 'this share is under maintenance; try again later', reason: 'maintenance' };

const tooMany = (ms: number): PolicyRefusal => {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return {
    code: 'EH_POLICY_RATE_LIMITED',
    message: `too many requests to this share; retry after ${seconds} s`,
    reason: 'rate_limit',
    headers: { 'retry-after': String(seconds) },
  };
};

const then = <T>(value: T | Promise<T>, next: (v: T) => Verdict | Promise<Verdict>): Verdict | Promise<Verdict> =>
  value instanceof Promise ? value.then(next) : next(value);

/** The IP rules' refusal of `address` (the same for a request and a TCP share's connection, edge/pipeline/ipRules.ts). */
export const addressDenied = (address: string): PolicyRefusal => ({
  code: 'EH_POLICY_ADDRESS_DENIED',
  message: `the share does not admit the address ${address}`,
  reason: 'ip',
});

export class PolicyGate {
  constructor(
    readonly addresses: ClientAddress,
    private readonly limiter: PolicyRateLimiter,
  ) {}

  /** The first rule of the share's policy that refuses the request, or undefined. */
  check(route: ShareRoute, policy: CompiledPolicy, req: IncomingMessage): Verdict | Promise<Verdict> {
    const address = this.addresses.of(req);
    if ((policy.allow || policy.deny) && !ipAdmits(policy, address)) return addressDenied(address);
    if (policy.rate?.by === 'client-ip') return then(this.count(route, policy, address), (ms) => (ms ? tooMany(ms) : this.afterRate(policy, req)));
    return this.afterRate(policy, req);
  }

  private afterRate(policy: CompiledPolicy, req: IncomingMessage): Verdict | Promise<Verdict> {
    if (!policy.basicAuth) return policy.maintenance ? maintenance : undefined;
    return then(policy.basicAuth.check(req.headers.authorization), (user) => (!user ? basicAuthRefusal : policy.maintenance ? maintenance : undefined));
  }

  /**
   * A rate limit by identity, once the share's other access rules have passed: counted by the client certificate or
   * login email they verified (`identity`), else the basic auth user, else the client address.
   */
  limitIdentity(route: ShareRoute, policy: CompiledPolicy, req: IncomingMessage, identity: Record<string, string> | undefined): Verdict | Promise<Verdict> {
    if (policy.rate?.by !== 'identity') return undefined;
    const verified = identity?.['x-client-certificate-fingerprint'] ?? identity?.['x-forwarded-email'];
    const key = (user: string | undefined) => (verified ? `id:${verified}` : user ? `user:${user}` : `ip:${this.addresses.of(req)}`);
    const counted = (user: string | undefined) => then(this.count(route, policy, key(user)), (ms) => (ms ? tooMany(ms) : undefined));
    if (verified || !policy.basicAuth) return counted(undefined);
    return then(policy.basicAuth.check(req.headers.authorization), counted);
  }

  private count(route: ShareRoute, policy: CompiledPolicy, who: string): number | Promise<number> {
    const rate = policy.rate!;
    return this.limiter.consume(`${route.hubId}:${route.zId}:${who}`, rate.points, rate.seconds);
  }
}
