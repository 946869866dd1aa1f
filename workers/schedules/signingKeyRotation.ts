import { CronExpressionParser } from 'cron-parser';
import { requestRotation } from '../../domain/commands/signingKeys.js';
import { config } from '../../shared/config.js';
import { SigningKey } from '../../domain/models/SigningKey.js';
import { defineSchedule } from '../schedule.js';

/** When HUB_KEY_ROTATION_CRON last fired, at or before `now` (the process's time zone, as node-cron reads it). */
export function lastScheduledRotation(now = new Date(), cron = config().keyRotationCron): Date {
  return CronExpressionParser.parse(cron, { currentDate: now }).prev().toDate();
}

/**
 * The active key's kid when it was made before the last scheduled rotation: that rotation was missed (the clock was
 * down, or Redis or PostgreSQL was away at its tick, or its job failed). No active key yet is not overdue: the first
 * JWT makes one.
 */
export async function rotationOverdue(now = new Date()): Promise<string | undefined> {
  const active = await SigningKey.findOne({ where: { status: 'ACTIVE' }, attributes: ['kid', 'createdAt'] });
  return active !== null && active.createdAt.getTime() < lastScheduledRotation(now).getTime() ? active.kid : undefined;
}

/** Rotates the enrollment JWT signing key on HUB_KEY_ROTATION_CRON (default: monthly), through a pki job. */
export const rotationSchedule = defineSchedule({
  name: 'signing-key-rotation',
  cron: config().keyRotationCron,
  run: async () => {
    await requestRotation('clock');
  },
});

/**
 * A rotation missed at its tick is made up within ten minutes: one read each time, and a rotation only when one is
 * overdue. Both ask for the rotation of the key they found active, which is one job however often it is asked for;
 * a key that a rotation replaced meanwhile (the scheduled tick's, at the same second) is not rotated again.
 */
export const rotationCatchUp = defineSchedule({
  name: 'signing-key-rotation-catch-up',
  cron: '0 */10 * * * *',
  run: async () => {
    const overdue = await rotationOverdue();
    if (overdue) await requestRotation('clock', overdue);
  },
});

export default [rotationSchedule, rotationCatchUp];
