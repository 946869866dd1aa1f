/**
 * The deletion of recorded exchanges with what they belong to: a share's (its deletion), or every share's of a hub
 * (the hub's), with their bytes taken off the hub's accounting of the bounds (shared/inspect/store.ts).
 */
import type { Redis } from 'ioredis';
import { boundKeys, inspectKeys } from './store.js';

/**
 * KEYS: summaries, details, counts, the hub's shares, every hub's bytes. ARGV: the share, the hub. Deletes the
 * share's recordings and takes their bytes off the hub's.
 */
const FORGET_SHARE = `
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local v = redis.call('HGET', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
local h = redis.call('HGET', KEYS[5], ARGV[2])
if v and h then
  local b = tonumber(string.match(v, '^(%d+)')) or 0
  local hb, at = string.match(h, '^(%d+):(%d+)$')
  if hb then redis.call('HSET', KEYS[5], ARGV[2], math.max(0, tonumber(hb) - b) .. ':' .. at) end
end
return 1
`;

/**
 * KEYS: the hub's shares, every hub's bytes. ARGV: the key prefix, the hub. Deletes the recordings of every share of
 * the hub that has some, and the hub's accounting. (The streams' names are built here: they are all the hub's.)
 */
const FORGET_HUB = `
for _, z in ipairs(redis.call('HKEYS', KEYS[1])) do
  local base = ARGV[1] .. ':inspect:{' .. ARGV[2] .. '/' .. z .. '}:'
  redis.call('DEL', base .. 's', base .. 'd', base .. 'n')
end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], ARGV[2])
return 1
`;

/** Deletes one share's recordings (its deletion), and takes them off its hub's bytes. */
export async function forgetShare(redis: Redis, prefix: string, hubId: string, zId: string): Promise<void> {
  const keys = inspectKeys(prefix, hubId, zId);
  const bounds = boundKeys(prefix, hubId);
  await redis.eval(FORGET_SHARE, 5, keys.summaries, keys.details, keys.counts, bounds.hub, bounds.hubs, zId, hubId);
}

/** Deletes the recordings of every share of a hub (its deletion). */
export async function forgetHub(redis: Redis, prefix: string, hubId: string): Promise<void> {
  const bounds = boundKeys(prefix, hubId);
  await redis.eval(FORGET_HUB, 2, bounds.hub, bounds.hubs, prefix, hubId);
}
