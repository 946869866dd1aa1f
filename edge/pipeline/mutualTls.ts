/** Step 4: a mutual-TLS share's client certificate (edge/access/mutualTls.ts); its identity goes to the target. */
import type { Step } from './exchange.js';
import { identityOf } from './guard.js';
import type { PipelineParts } from './parts.js';

export const mutualTls =
  (parts: PipelineParts): Step =>
  (x) => {
    const route = x.route!;
    if (!route.mutualTls) return undefined;
    const identity = identityOf(parts, route, x.connection, x.secure);
    if (!identity.ok) return { code: identity.code, message: identity.message };
    x.identity = identity.headers;
    return undefined;
  };
