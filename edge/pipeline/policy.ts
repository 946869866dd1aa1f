/**
 * Step 3: the share's traffic policy (edge/policy/gate.ts): its IP rules, rate limit, basic auth and maintenance, in
 * that order. (Its error pages are the body of the edge's 502, 503 and 504 for the share: edge/answers.ts.)
 */
import type { Step } from './exchange.js';
import type { PipelineParts } from './parts.js';

export const policy =
  ({ gate }: PipelineParts): Step =>
  (x) => {
    const route = x.route!;
    const p = route.policy;
    if (!p) return undefined;
    return gate.check(route, p, x.req);
  };
