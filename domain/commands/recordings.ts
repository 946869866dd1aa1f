/**
 * A deleted share's or hub's recorded exchanges go with it: deleted from Redis as soon as the row is (they would
 * otherwise stay, and count against the hub's inspection bounds, until the TTL). Redis being away does not fail the
 * deletion: it is said in the log, and the recordings expire with the TTL.
 */
import { config } from '../../shared/config.js';
import { forgetHub, forgetShare } from '../../shared/inspect/forget.js';
import { logger } from '../../shared/logger.js';
import { readyRedis } from '../../shared/redis.js';
import { settleWithin } from '../../shared/timeouts.js';

const WAIT_MS = 2000;

async function forget(what: Record<string, string>, work: (redis: Awaited<ReturnType<typeof readyRedis>>, prefix: string) => Promise<void>): Promise<void> {
  try {
    const redis = await readyRedis(WAIT_MS);
    await settleWithin(work(redis, config().queuePrefix), WAIT_MS, () => new Error(`Redis did not answer within ${WAIT_MS} ms`));
  } catch (err) {
    logger.warn({ ...what, err: (err as Error).message }, 'recorded exchanges not deleted now; they expire with HUB_INSPECT_TTL');
  }
}

export const forgetShareRecordings = (hubId: string, zId: string) => forget({ hubId, zId }, (redis, prefix) => forgetShare(redis, prefix, hubId, zId));

export const forgetHubRecordings = (hubId: string) => forget({ hubId }, (redis, prefix) => forgetHub(redis, prefix, hubId));
