/**
 * Step 5: per-hub admission (edge/pipeline/limits.ts): a hub with too many requests or connections in progress on this edge is
 * answered 503; an admitted exchange leaves when it ends.
 */
import type { Step } from './exchange.js';

export const admission = (): Step => (x) => x.admit();
