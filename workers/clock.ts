import { randomUUID } from 'node:crypto';
import cron, { type ScheduledTask } from 'node-cron';
import { config } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import { logger } from '../shared/logger.js';
import { closeQueues } from '../domain/jobs/queues.js';
import { closeRedis, readyRedis } from '../shared/redis.js';
import { refuseUnreachableSentinels } from '../shared/redisSentinel.js';
import { refuseWrongSecretKey } from '../shared/secretKeyProbe.js';
import { isMain, onShutdown } from '../shared/shutdown.js';
import { startMetricsServer } from '../shared/telemetry/index.js';
import type { Schedule } from './schedule.js';
import { schedules as allSchedules } from './schedules/index.js';
import { presetSetting } from '../shared/settings.js';

/**
 * Runs `fn` for one tick of a schedule unless another clock already took that tick. The key names the schedule and
 * the tick (the cron's scheduled second, read on each clock's own time, so clocks whose hosts disagree by less than
 * half a second still name the same tick) and is never released early: it expires after `ttlMs`, long after every
 * clock has fired for that tick. The key carries HUB_QUEUE_PREFIX like every other Redis key, so deployments sharing
 * one Redis do not lock each other out.
 */
export async function runExclusive(name: string, tick: Date, ttlMs: number, fn: () => Promise<void>): Promise<boolean> {
  const key = `${config().queuePrefix}:clock:${name}:${Math.round(tick.getTime() / 1000)}`;
  const client = await readyRedis();
  const taken = await client.set(key, randomUUID(), 'PX', ttlMs, 'NX');
  if (taken !== 'OK') return false;
  await fn();
  return true;
}

function startClock(schedules: Schedule[]): ScheduledTask[] {
  return schedules.map((s) => {
    if (!cron.validate(s.cron)) throw new Error(`schedule '${s.name}' has an invalid cron expression '${s.cron}'`);
    return cron.schedule(
      s.cron,
      async (context) => {
        try {
          await runExclusive(s.name, context.date, 10 * 60_000, s.run);
        } catch (err) {
          logger.warn({ schedule: s.name, err: (err as Error).message }, 'scheduled run failed');
        }
      },
      { name: s.name, noOverlap: true },
    );
  });
}

async function main(): Promise<void> {
  presetSetting('HUB_PROCESS', 'clock');
  await initDb();
  await refuseWrongSecretKey();
  await refuseUnreachableSentinels();
  const schedules = allSchedules;
  const tasks = startClock(schedules);
  await startMetricsServer();
  logger.info({ schedules: schedules.map((s) => `${s.name} (${s.cron})`) }, 'clock started');
  onShutdown(async () => {
    await Promise.all(tasks.map((t) => t.stop()));
    await closeQueues();
    await closeRedis();
    await closeDb();
  });
}

// not a top-level await: schedule files may import this module, and they load while main() runs
if (isMain(import.meta.url)) {
  main().catch((err) => {
    logger.fatal({ err }, 'clock failed to start');
    process.exit(1);
  });
}
