/**
 * `work`, or a rejection with `onTimeout()` once `ms` have passed; the timer is cleared either way. What `work` does
 * after the time is up is nobody's to wait for: a late rejection of it is handled here (an unhandled one would end
 * the process), and the work itself goes on.
 */
export function settleWithin<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  work.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), Math.max(0, ms));
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
