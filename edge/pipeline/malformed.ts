/** Step 1: a request unfit to route (edge/pipeline/refusals.ts) is answered 400, or 508 when it loops back to the edge. */
import { requestRefusal } from './refusals.js';
import type { Step } from './exchange.js';
import type { PipelineParts } from './parts.js';

export const malformed =
  ({ mark }: PipelineParts): Step =>
  (x) => {
    const refused = requestRefusal(x.req, x.host, mark);
    return refused && { code: refused[0], message: refused[1] };
  };
