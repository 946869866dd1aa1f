/**
 * Comparing another tenant's p99 under an attack with its p99 without. On the 2-core machines tests run on, with
 * another test file running beside this one, a p99 of 1-3 ms moves by a scheduler time slice (a few ms) whatever the
 * edge does, so a ratio of two such figures says nothing. A reference below LATENCY_FLOOR_MS counts as that floor:
 * "less than 2x" is then "under 10 ms" for a victim that answers in 2 ms, which still fails an attack that costs the
 * other tenant what the findings saw (20 ms becoming 235 ms).
 */
export const LATENCY_FLOOR_MS = 5;

/** Whether `during` (ms) is less than twice `reference` (ms), the reference taken at least at the floor. */
export const underTwice = (during: number, reference: number): boolean => during < 2 * Math.max(reference, LATENCY_FLOOR_MS);
