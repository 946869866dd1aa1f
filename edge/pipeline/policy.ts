/**
 * Step 3: the share's traffic policy (edge/policy/gate.ts): its IP rules, rate limit, basic auth and maintenance, in
 * that order; its error pages for the edge's answers from here on.
 */
import { useErrorPages } from '../answers.js';
import type { Step } from './exchange.js';
import type { PipelineParts } from './parts.js';

export const policy =
  ({ gate }: PipelineParts): Step =>
  (x) => {
    const route = x.route!;
    const p = route.policy;
    if (!p) return undefined;
    if (p.errorPages) useErrorPages(x.answers, p.errorPages);
    return gate.check(route, p, x.req);
  };
