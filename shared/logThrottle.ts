/**
 * A problem that repeats (each reconnection attempt of each queue's worker, each job while a store is away) is said
 * at most once per interval for each key, with how many times it happened since it was last said: an outage shows in
 * the log without flooding it. The keys are bounded: past `maxKeys` the oldest are forgotten.
 */
export function logThrottle(intervalMs: number, maxKeys = 100): (key: string, say: (repeated: number) => void) => void {
  const seen = new Map<string, { at: number; repeated: number }>();
  return (key, say) => {
    const now = Date.now();
    const entry = seen.get(key);
    if (entry && now - entry.at < intervalMs) {
      entry.repeated++;
      return;
    }
    seen.delete(key);
    if (seen.size >= maxKeys) seen.delete(seen.keys().next().value as string);
    seen.set(key, { at: now, repeated: 0 });
    say(entry?.repeated ?? 0);
  };
}
