/**
 * Step 7: a share's rate limit by identity (edge/policy/gate.ts limitIdentity), counted once the steps before verified
 * one (client certificate, login email), else by the basic auth user, else by the client address.
 */
import type { Step } from './exchange.js';
import type { PipelineParts } from './parts.js';

export const identityRate =
  ({ gate }: PipelineParts): Step =>
  (x) => {
    const route = x.route!;
    const policy = route.policy;
    if (!policy?.rate || policy.rate.by !== 'identity') return undefined;
    return gate.limitIdentity(route, policy, x.req, x.identity);
  };
