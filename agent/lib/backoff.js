/**
 * Exponential backoff, the one formula every retry loop uses, the agent's and the server's alike (the server imports
 * it as `edgehub-agent/backoff`: the agent package stands alone, so the one copy lives here): `minMs` for the first
 * retry (attempt 1), doubling with each further attempt, never above `maxMs`. `jitter` (0 to 1) takes up to that
 * share off at random, so that many clients that failed together do not retry together.
 *
 * @param {number} attempt
 * @param {{ minMs: number, maxMs: number, jitter?: number }} options
 * @returns {number}
 */
export function backoffMs(attempt, options) {
  const ceiling = Math.min(options.maxMs, options.minMs * 2 ** Math.max(0, attempt - 1));
  return options.jitter ? Math.round(ceiling * (1 - options.jitter * Math.random())) : ceiling;
}
