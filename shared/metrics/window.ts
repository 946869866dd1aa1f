import { badRequest } from '../errors.js';
import { DURATION, isoDuration, parseDurationParam } from '../durations.js';

const { MINUTE, HOUR, DAY } = DURATION;

/** Which bucket table answers a window: hour buckets when the step is whole hours, minute buckets otherwise. */
type Tier = 'usage_minutes' | 'usage_hours';

export interface MetricsWindow {
  /** First bucket start (inclusive), a multiple of the step since the epoch. */
  startMs: number;
  /** End of the last bucket (exclusive); the last bucket holds "now", so it may be partial. */
  endMs: number;
  stepMs: number;
  points: number;
  /** The requested duration, ISO 8601 (the `period` of the response). */
  period: string;
  tier: Tier;
}

/** Minute buckets are pruned after this; longer windows need whole-hour steps. */
export const MINUTE_TIER_RETENTION_MS = 35 * DAY;
const MAX_WINDOW_MS = 400 * DAY;
const MAX_POINTS = 10_000;
const NICE_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 10080].map((m) => m * MINUTE);

/** The smallest step from a fixed ladder that keeps a window of `durationMs` within `maxPoints` buckets. */
function defaultStep(durationMs: number, maxPoints: number): number {
  return NICE_STEPS.find((step) => Math.ceil(durationMs / step) <= maxPoints) ?? NICE_STEPS[NICE_STEPS.length - 1];
}

interface WindowRequest {
  durationMs: number;
  stepMs?: number;
  /** Upper bound on the number of buckets when the step is chosen for the caller. */
  targetPoints?: number;
  now?: number;
}

/** Buckets of `step` aligned to the epoch, the last one holding `now`, covering at least `duration`. */
export function planWindow({ durationMs, stepMs, targetPoints = 200, now = Date.now() }: WindowRequest): MetricsWindow {
  if (durationMs > MAX_WINDOW_MS) throw badRequest(`the metrics window must be at most ${isoDuration(MAX_WINDOW_MS)}`);
  const step = stepMs ?? defaultStep(durationMs, targetPoints);
  if (step % MINUTE !== 0) throw badRequest(`value for query parameter 'step' must be a whole number of minutes (PT1M, PT5M, PT1H, ...)`);
  const points = Math.ceil(durationMs / step);
  if (points > MAX_POINTS) {
    throw badRequest(
      `a ${isoDuration(durationMs)} window with step ${isoDuration(step)} has ${points} points; at most ${MAX_POINTS} are allowed (use a larger step)`,
    );
  }
  const tier: Tier = step % HOUR === 0 ? 'usage_hours' : 'usage_minutes';
  if (tier === 'usage_minutes' && durationMs + step > MINUTE_TIER_RETENTION_MS) {
    throw badRequest(
      `windows longer than ${isoDuration(MINUTE_TIER_RETENTION_MS - HOUR)} need a step of whole hours (minute buckets are kept ${isoDuration(MINUTE_TIER_RETENTION_MS)})`,
    );
  }
  const endMs = Math.floor(now / step) * step + step;
  return { startMs: endMs - points * step, endMs, stepMs: step, points, period: isoDuration(durationMs), tier };
}

const first = (v: unknown): string | undefined => {
  const value = Array.isArray(v) ? v[0] : v;
  return typeof value === 'string' && value !== '' ? value : undefined;
};

/** The window of a metrics request: `duration` or its alias `range` (one of them, else the default), optional `step`. */
export function windowFromQuery(query: Record<string, unknown>, options: { defaultDuration: string; targetPoints?: number; now?: number }): MetricsWindow {
  const given = ['duration', 'range'].filter((n) => first(query[n]) !== undefined);
  if (given.length > 1) throw badRequest(`give one of the query parameters 'duration' or 'range', not both`);
  const name = given[0] ?? 'duration';
  const durationMs = parseDurationParam(name, first(query[name]) ?? options.defaultDuration);
  const stepText = first(query.step);
  const stepMs = stepText === undefined ? undefined : parseDurationParam('step', stepText);
  return planWindow({ durationMs, stepMs, targetPoints: options.targetPoints, now: options.now });
}
