/**
 * Writing exchanges to the inspection store (./store.ts tells its layout and bounds): a batch of exchanges added by one
 * script that checks the hub's bounds, trims, accounts and publishes in one step.
 */
import type { Redis } from 'ioredis';
import {
  boundKeys,
  type CapturedMessage,
  exchangeId,
  type InspectLimits,
  inspectKeys,
  type RecordedExchange,
  type StoredDetail,
  type StoredSummary,
} from './store.js';

/** An exchange's summary and detail from what the edge captured. */
export const recordedExchange = (summary: StoredSummary, request: CapturedMessage, response: CapturedMessage): RecordedExchange => ({
  summary,
  detail: [request.lines, request.body, request.bodyTruncated ? 1 : 0, response.lines, response.body, response.bodyTruncated ? 1 : 0],
});

/** About how many bytes an exchange takes in the store (for the edge's queue bound and the batch size). */
export function recordedBytes({ detail }: RecordedExchange): number {
  let n = 256 + detail[1].length + detail[4].length;
  for (const lines of [detail[0], detail[3]]) for (const line of lines) n += line.length + 3;
  return n;
}

/**
 * The most exchanges in one batch entry: serializing one takes the edge a few hundred µs, during which its other
 * requests wait, so a busy edge writes several small entries with its requests served in between.
 */
export const BATCH = 64;
/** A batch entry's details stop growing past this many bytes (one exchange may exceed it alone). */
export const ENTRY_BYTES = 1024 * 1024;

/** What the record script answers instead of an entry id when a bound refuses the batch. */
export type BoundRefusal = 'bound_shares' | 'bound_bytes';
export const isBoundRefusal = (answer: unknown): answer is BoundRefusal => answer === 'bound_shares' || answer === 'bound_bytes';

/**
 * KEYS: summaries, details, counts, the hub's shares, every hub's bytes. ARGV: max exchanges, ttl ms, live channel,
 * the batch's summaries (JSON array), its details (JSON array), how many exchanges it holds, its bytes, the share,
 * the hub, the hub's bytes bound, the hub's shares bound, the bound over all hubs, the share's bytes bound (the hub's
 * divided by its shares).
 *
 * Refuses the batch (`bound_shares`) when the share has no recordings and the hub already has as many shares with
 * recordings as it may, or (`bound_bytes`) when the batch alone does not fit in the share's room: its part of the
 * hub's bytes, within what the hub's other shares and the other hubs leave. Else adds it to the three streams under one entry id, then keeps, newest first, the
 * batches within the newest `max` exchanges, the TTL and the room (trimming the older ones from all three streams),
 * renews the expiry, writes the share's and the hub's bytes, publishes the summaries to the live channel, and returns
 * the entry id.
 */
const RECORD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local function held(key, own)
  local sum, count, mine = 0, 0, nil
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local b, at = string.match(all[i + 1], '^(%d+):(%d+)$')
    if not b or tonumber(at) + ttl <= now then redis.call('HDEL', key, all[i])
    elseif all[i] == own then mine = tonumber(b)
    else sum = sum + tonumber(b) count = count + 1 end
  end
  return sum, count, mine
end
local others, shares, mine = held(KEYS[4], ARGV[8])
if not mine and shares >= tonumber(ARGV[11]) then return 'bound_shares' end
local elsewhere = held(KEYS[5], ARGV[9])
local room = math.min(tonumber(ARGV[13]), tonumber(ARGV[10]) - others, tonumber(ARGV[12]) - elsewhere - others)
if tonumber(ARGV[7]) > room then return 'bound_bytes' end
local id = redis.call('XADD', KEYS[1], '*', 'b', ARGV[4])
redis.call('XADD', KEYS[2], id, 'b', ARGV[5])
redis.call('XADD', KEYS[3], id, 'n', ARGV[6], 'b', ARGV[7])
local max = tonumber(ARGV[1])
local cutoff = tonumber(string.match(id, '^(%d+)')) - ttl
local keep, last, total, used = nil, nil, 0, 0
for _, entry in ipairs(redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', max)) do
  local size = tonumber(entry[2][4] or '0')
  if tonumber(string.match(entry[1], '^(%d+)')) < cutoff or used + size > room then keep = last break end
  used = used + size
  total = total + tonumber(entry[2][2])
  last = entry[1]
  if total >= max then keep = entry[1] break end
end
for i = 1, 3 do
  if keep then redis.call('XTRIM', KEYS[i], 'MINID', keep) end
  redis.call('PEXPIRE', KEYS[i], ttl)
end
redis.call('HSET', KEYS[4], ARGV[8], used .. ':' .. now)
redis.call('PEXPIRE', KEYS[4], ttl)
redis.call('HSET', KEYS[5], ARGV[9], (others + used) .. ':' .. now)
redis.call('PEXPIRE', KEYS[5], ttl)
redis.call('PUBLISH', ARGV[3], id .. ' ' .. ARGV[4])
return id
`;

type WithRecord = Redis & { inspectRecord(...args: (string | number)[]): Promise<string> };

/** The connection with the record script defined (EVALSHA, loaded on first use). */
export function withRecordScript(redis: Redis): WithRecord {
  if (!(redis as unknown as Partial<WithRecord>).inspectRecord) redis.defineCommand('inspectRecord', { numberOfKeys: 5, lua: RECORD });
  return redis as WithRecord;
}

/**
 * The arguments of one record call: a batch of one share's exchanges, each serialized once here (one JSON text for
 * the summaries and one for the details: no text per exchange to build and join).
 */
export function recordArgs(prefix: string, hubId: string, zId: string, limits: InspectLimits, batch: readonly RecordedExchange[]): (string | number)[] {
  const keys = inspectKeys(prefix, hubId, zId);
  const bounds = boundKeys(prefix, hubId);
  const summaries: StoredSummary[] = new Array(batch.length);
  const details: StoredDetail[] = new Array(batch.length);
  let bytes = 0;
  for (let i = 0; i < batch.length; i++) {
    summaries[i] = batch[i].summary;
    details[i] = batch[i].detail;
    bytes += recordedBytes(batch[i]);
  }
  const unbounded = Number.MAX_SAFE_INTEGER;
  return [
    keys.summaries,
    keys.details,
    keys.counts,
    bounds.hub,
    bounds.hubs,
    limits.max,
    limits.ttlMs,
    keys.live,
    JSON.stringify(summaries),
    JSON.stringify(details),
    batch.length,
    bytes,
    zId,
    hubId,
    limits.hubBytes ?? unbounded,
    limits.hubShares ?? unbounded,
    limits.totalBytes ?? unbounded,
    limits.hubBytes === undefined ? unbounded : Math.floor(limits.hubBytes / (limits.hubShares ?? 1)),
  ];
}

/** A batch a bound refused (the record script's answer): said to the caller as an error. */
export class BoundError extends Error {
  constructor(readonly reason: BoundRefusal) {
    super(
      reason === 'bound_shares'
        ? 'the hub has as many shares with recorded exchanges as HUB_INSPECT_HUB_SHARES allows'
        : 'the recorded exchanges of the hub (HUB_INSPECT_HUB_BYTES) or of all hubs (HUB_INSPECT_TOTAL_BYTES) leave no room for it',
    );
  }
}

/** Records one exchange now (a batch of its own); resolves to its id, or rejects with a BoundError. */
export async function recordExchange(
  redis: Redis,
  prefix: string,
  hubId: string,
  zId: string,
  limits: InspectLimits,
  exchange: RecordedExchange,
): Promise<string> {
  const entry = await withRecordScript(redis).inspectRecord(...recordArgs(prefix, hubId, zId, limits, [exchange]));
  if (isBoundRefusal(entry)) throw new BoundError(entry);
  return exchangeId(entry, 0);
}
