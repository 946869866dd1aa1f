/**
 * Exponential backoff, the one formula every retry loop here uses: `minMs` for the first retry (attempt 1), doubling
 * with each further attempt, never above `maxMs`. `jitter` (0 to 1) takes up to that share off at random, so that
 * many clients that failed together do not retry together.
 */
export function backoffMs(attempt: number, options: { minMs: number; maxMs: number; jitter?: number }): number {
  const ceiling = Math.min(options.maxMs, options.minMs * 2 ** Math.max(0, attempt - 1));
  return options.jitter ? Math.round(ceiling * (1 - options.jitter * Math.random())) : ceiling;
}
