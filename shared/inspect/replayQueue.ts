/**
 * The replay requests waiting for an edge, fair per hub: a queue per hub (a Redis list), and a ring of the hubs that
 * have some, served round robin. An edge takes the next request of the next hub in the ring that it is not already
 * carrying as many replays of as it may (HUB_INSPECT_REPLAYS_PER_HUB), so one hub's replays never hold every slot
 * of an edge, and a hub's replay never waits behind another hub's queue. A wake list carries hints only (one per new
 * request, one per slot a busy hub frees): an edge waits on it (BRPOP) and then tries to take, and also tries every
 * second without a hint, so a hint lost (an edge that stopped between the two) delays a request by a second at most.
 */
import type { Redis } from 'ioredis';
import type { ReplayRequest } from './store.js';

export const replayKeys = (prefix: string) => ({
  /** The hubs with waiting requests, a ring: the next is taken from the tail and put back at the head. */
  ring: `${prefix}:inspect:replays:hubs`,
  /** The same hubs as a set: whether a hub is in the ring. */
  queued: `${prefix}:inspect:replays:queued`,
  /** The prefix of a hub's queue (`<prefix><hubId>`): newest at the head, taken from the tail. */
  hub: `${prefix}:inspect:replays:hub:`,
  /** Hints that a request may be ready for an edge. */
  wake: `${prefix}:inspect:replays:wake`,
  /** The channel prefix of the edges' answers to one web process. */
  replies: `${prefix}:inspect:replies:`,
});

/** Hints kept at most: with no edge running, they do not pile up. */
const WAKE_MAX = 1000;

/** KEYS: the hub's queue, queued, ring, wake. ARGV: the hub, the request. */
const ENQUEUE = `
redis.call('LPUSH', KEYS[1], ARGV[2])
if redis.call('SADD', KEYS[2], ARGV[1]) == 1 then redis.call('LPUSH', KEYS[3], ARGV[1]) end
redis.call('LPUSH', KEYS[4], '1')
redis.call('LTRIM', KEYS[4], 0, ${WAKE_MAX - 1})
return 1
`;

/**
 * KEYS: queued, ring. ARGV: the prefix of the hubs' queues, then the hubs this edge may take no more of. Goes round
 * the ring once: a hub with nothing left leaves it; the first hub not excluded that has a request gives it (and
 * goes to the back of the ring). Answers `{hub, request}`, or `capped` when only excluded hubs wait, or `empty`.
 */
const TAKE = `
local busy = {}
for i = 2, #ARGV do busy[ARGV[i]] = true end
local capped = false
for _ = 1, redis.call('LLEN', KEYS[2]) do
  local hub = redis.call('RPOPLPUSH', KEYS[2], KEYS[2])
  if not hub then break end
  if busy[hub] then capped = true
  else
    local q = ARGV[1] .. hub
    local item = redis.call('RPOP', q)
    if redis.call('LLEN', q) == 0 then
      redis.call('LREM', KEYS[2], 0, hub)
      redis.call('SREM', KEYS[1], hub)
    end
    if item then return {hub, item} end
  end
end
if capped then return 'capped' end
return 'empty'
`;

/** Puts a replay request in its hub's queue and wakes an edge. */
export async function enqueueReplay(redis: Redis, prefix: string, request: ReplayRequest, text: string): Promise<void> {
  const keys = replayKeys(prefix);
  await redis.eval(ENQUEUE, 4, keys.hub + request.hubId, keys.queued, keys.ring, keys.wake, request.hubId, text);
}

/** Takes back a request nobody took in time (it must not run later); its hub leaves the ring when an edge finds it empty. */
export async function withdrawReplay(redis: Redis, prefix: string, request: ReplayRequest, text: string): Promise<void> {
  await redis.lrem(replayKeys(prefix).hub + request.hubId, 1, text);
}

/** The next request for an edge that carries as many replays of the `busy` hubs as it may; or why there is none. */
export async function takeReplay(redis: Redis, prefix: string, busy: Iterable<string>): Promise<string | 'capped' | 'empty'> {
  const keys = replayKeys(prefix);
  const answer = (await redis.eval(TAKE, 2, keys.queued, keys.ring, keys.hub, ...busy)) as [string, string] | 'capped' | 'empty';
  return Array.isArray(answer) ? answer[1] : answer;
}

/** A hint that a request may be ready (a slot of a busy hub was freed). */
export const wakeReplays = (redis: Redis, prefix: string) => redis.lpush(replayKeys(prefix).wake, '1');
