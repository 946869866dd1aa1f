/**
 * Exponential backoff, the one formula every retry loop here uses (`backoffMs(attempt, { minMs, maxMs, jitter })`):
 * its one copy is the agent package's, which must stand alone and reconnects with it too.
 */
export { backoffMs } from 'edgehub-agent/backoff';
