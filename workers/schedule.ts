/**
 * The shape of a clock schedule. Kept apart from clock.ts: schedule files import this, and clock.ts imports the
 * schedule files at start-up (an import back into clock.ts would be a cycle that never finishes loading).
 */
export interface Schedule {
  name: string;
  /** node-cron expression (six fields allowed: seconds first). */
  cron: string;
  /** Usually enqueues a job; runs under a Redis lock so that two clocks never fire the same tick twice. */
  run(): Promise<void>;
}

export const defineSchedule = (s: Schedule): Schedule => s;
