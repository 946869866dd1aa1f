/** Step 2: a request for a host where no share is published is answered 404. */
import type { Step } from './exchange.js';

export const routed = (): Step => (x) => {
  if (x.route) return undefined;
  // an upgrade has always named the empty host as it is; its bytes stay as they were
  const message = x.host || x.upgrade ? `no share is published at ${x.host}` : 'the request names no host';
  return { code: 'EH_SHARE_NOT_PUBLISHED', message };
};
