/**
 * Where request inspection keeps exchanges: Redis, shared by every edge and read by the web process. Each share has
 * three streams under one hash tag (`{hub/share}`, so a cluster keeps them on one node), whose entries are written
 * together by one script and carry the same entry id:
 * - the summaries (what lists show): one entry per batch an edge writes, a JSON array of summaries;
 * - the details (headers and bodies): the same batch's details, a JSON array in the same order;
 * - the counts: how many exchanges each batch holds, which the script reads to bound the share by exchanges.
 * An exchange's id is its batch's entry id and its place in it (`<entry id>.<index>`). One entry per batch, not per
 * exchange, is what keeps Redis's work per recorded exchange small (measured: about 7 µs of Redis CPU per exchange
 * with an entry each, under 1 µs with an entry per batch); an edge writes batches of at most BATCH exchanges and
 * ENTRY_BYTES of details, so that reading one exchange reads at most that.
 * Keys name the hub and the share: nothing of one hub is ever read through another's.
 *
 * Bounds: after each batch, the batches older than the newest `HUB_INSPECT_MAX` exchanges (by the counts) and those
 * older than the TTL are trimmed from all three streams; all three expire after the TTL without writes. Trimming
 * keeps whole batches, so a stream may hold up to a batch more than the limit: readers apply the exact count and age.
 * Per hub and over all hubs, the bytes kept are bounded too (HUB_INSPECT_HUB_BYTES, HUB_INSPECT_TOTAL_BYTES), and
 * so is the number of a hub's shares with recordings (HUB_INSPECT_HUB_SHARES). Each share of a hub may keep its part
 * of the hub's bytes (HUB_INSPECT_HUB_BYTES / HUB_INSPECT_HUB_SHARES), so that a busy share never starves the hub's
 * others: a share that records makes room by trimming its own oldest batches, never another share's, and a batch
 * that still does not fit (alone larger than the room, or all hubs at HUB_INSPECT_TOTAL_BYTES) is refused (the edge
 * drops and counts it). The script that checks and writes reads the hub's and every hub's accounting, keys of other
 * hash slots: inspection, like the job queues (whose prefix has no hash tag), needs one Redis, not a cluster.
 */
import type { Redis } from 'ioredis';

export interface ExchangeSummary {
  id: string;
  /** When the request reached the edge (ISO 8601, milliseconds). */
  at: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  rxBytes: number;
  txBytes: number;
  clientAddress: string;
  /** The edge process that carried it. */
  edge: string;
  /** The exchange this one sent again, for a replay. */
  replayOf?: string;
}

export interface RecordedMessage {
  headers: [string, string][];
  /** base64 of the first HUB_INSPECT_BODY_BYTES bytes. */
  body: string;
  bodyTruncated: boolean;
}

export interface ExchangeDetail extends ExchangeSummary {
  request: RecordedMessage;
  response: RecordedMessage;
}

/**
 * A message as an edge records it: its header lines as they crossed (flat name, value, name, value...), credentials
 * already replaced (redactLines), and the kept body. Readers turn the lines into pairs (detailOf).
 */
export interface CapturedMessage {
  lines: readonly string[];
  /** base64 of the first HUB_INSPECT_BODY_BYTES bytes ('' for none). */
  body: string;
  bodyTruncated: boolean;
}

/**
 * What the summaries stream holds per exchange, in whole numbers: the summary without its id (the stream gives it),
 * `at` in epoch ms, the sort key `u` (when the request reached its edge, epoch µs) and the duration `d` in µs for `ms`.
 */
export type StoredSummary = Omit<ExchangeSummary, 'id' | 'at' | 'ms'> & { at: number; u: number; d: number };

/**
 * What the details stream holds per exchange: `[request lines, request body, request cut, response lines, response
 * body, response cut]` (cut: 0 or 1), which an edge builds without a pair per header or an object per message.
 */
export type StoredDetail = [readonly string[], string, 0 | 1, readonly string[], string, 0 | 1];

/** One exchange ready for the store. */
export interface RecordedExchange {
  summary: StoredSummary;
  detail: StoredDetail;
}

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

export interface InspectLimits {
  max: number;
  ttlMs: number;
  /** Bytes one hub keeps over its shares, shares of a hub with recordings, bytes over all hubs (default: unbounded). */
  hubBytes?: number;
  hubShares?: number;
  totalBytes?: number;
}

const tag = (hubId: string, zId: string) => `{${hubId}/${zId}}`;

export const inspectKeys = (prefix: string, hubId: string, zId: string) => ({
  summaries: `${prefix}:inspect:${tag(hubId, zId)}:s`,
  details: `${prefix}:inspect:${tag(hubId, zId)}:d`,
  counts: `${prefix}:inspect:${tag(hubId, zId)}:n`,
  /** Pub/sub channel of new summaries (the live view): `<entry id> <summaries JSON array>`, one message per batch. */
  live: `${prefix}:inspect:live:${hubId}/${zId}`,
});

/**
 * The accounting of the bounds: per hub, a hash of its shares with recordings (`<zId>` -> `<bytes>:<last write ms>`),
 * and one hash of every hub's bytes (`<hubId>` -> `<bytes>:<last write ms>`). An entry whose last write is older than
 * the TTL is gone with the streams it counted (they expire a TTL after their last write) and is dropped when read.
 */
export const boundKeys = (prefix: string, hubId: string) => ({ hub: `${prefix}:inspect:hub:${hubId}`, hubs: `${prefix}:inspect:hubs` });

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

/** An exchange's id: its batch's entry id and its place in the batch. */
export const exchangeId = (entry: string, index: number) => `${entry}.${index}`;

/** An entry id, and an index written as exchangeId writes it (no leading zero): one exchange, one id. */
const EXCHANGE_ID = /^(\d{1,20}-\d{1,20})(?:\.(0|[1-9]\d{0,3}))?$/;

/** The entry id and index an exchange id names, or undefined for anything else. */
export function parseExchangeId(id: string): { entry: string; index: number } | undefined {
  const m = EXCHANGE_ID.exec(id);
  return m ? { entry: m[1], index: m[2] === undefined ? 0 : Number(m[2]) } : undefined;
}

type AnyStoredSummary = Omit<ExchangeSummary, 'id' | 'at' | 'ms'> & { at: number | string; u?: number; d?: number; t?: number; ms?: number };

/** A summary as the API shows it, with its sort key `t` (epoch ms) inside; reads the earlier form (ISO `at`, `t`, `ms`) too. */
export function summaryOf(id: string, p: AnyStoredSummary): ExchangeSummary & { t: number } {
  const summary: ExchangeSummary & { t: number } = {
    id,
    at: typeof p.at === 'number' ? new Date(p.at).toISOString() : p.at,
    method: p.method,
    path: p.path,
    status: p.status,
    ms: p.d !== undefined ? Math.round(p.d / 100) / 10 : (p.ms ?? 0),
    rxBytes: p.rxBytes,
    txBytes: p.txBytes,
    clientAddress: p.clientAddress,
    edge: p.edge,
    t: p.u !== undefined ? p.u / 1000 : (p.t ?? 0),
  };
  if (p.replayOf !== undefined) summary.replayOf = p.replayOf;
  return summary;
}

/**
 * The summaries of one stream entry with their ids: a batch (field `b`, a JSON array) or, as written before batches,
 * one exchange (field `s`, whose id is the entry id).
 */
export function entrySummaries(entry: string, fields: string[]): (ExchangeSummary & { t: number })[] {
  if (fields[0] === 's') return [summaryOf(entry, JSON.parse(fields[1]) as AnyStoredSummary)];
  return batchSummaries(entry, fields[1]);
}

/** The summaries of a batch (its JSON array), each with its id: the entry id and its place. */
function batchSummaries(entry: string, json: string): (ExchangeSummary & { t: number })[] {
  const batch = JSON.parse(json) as AnyStoredSummary[];
  return batch.map((s, i) => summaryOf(exchangeId(entry, i), s));
}

/** The summaries a live message carries (`<entry id> <summaries JSON array>`); none for anything else. */
export function liveSummaries(message: string): ExchangeSummary[] {
  const space = message.indexOf(' ');
  const entry = message.slice(0, space);
  if (!parseExchangeId(entry) || message[space + 1] !== '[') return [];
  try {
    return batchSummaries(entry, message.slice(space + 1)).map(present);
  } catch {
    return [];
  }
}

export const present = ({ t: _t, ...summary }: ExchangeSummary & { t?: number }): ExchangeSummary => summary;

const pairsOf = (lines: readonly string[]): [string, string][] => {
  const out: [string, string][] = [];
  for (let i = 0; i < lines.length; i += 2) out.push([lines[i], lines[i + 1]]);
  return out;
};

/** A stored detail as the API shows it (the array an edge writes, or the object form written before it). */
function detailOf(parsed: StoredDetail | { request: RecordedMessage; response: RecordedMessage }): { request: RecordedMessage; response: RecordedMessage } {
  if (!Array.isArray(parsed)) return parsed;
  const [ql, qb, qt, rl, rb, rt] = parsed;
  return { request: { headers: pairsOf(ql), body: qb, bodyTruncated: qt === 1 }, response: { headers: pairsOf(rl), body: rb, bodyTruncated: rt === 1 } };
}

/** The entries needed for the newest `max` exchanges and a margin: two edges' batches interleave by arrival, not by `u`. */
const LIST_MARGIN = 100;

/**
 * The share's exchanges, newest first (by when they reached their edge, so that two edges' exchanges interleave as
 * they happened even when one edge's writes arrive later): at most `max`, none older than the TTL.
 */
export async function listExchanges(redis: Redis, prefix: string, hubId: string, zId: string, limits: InspectLimits): Promise<ExchangeSummary[]> {
  const keys = inspectKeys(prefix, hubId, zId);
  const cutoff = Date.now() - limits.ttlMs;
  const wanted = limits.max * 2 + LIST_MARGIN;
  const summaries: (ExchangeSummary & { t: number })[] = [];
  let end = '+';
  // batches hold one exchange or hundreds: read entries until there are enough exchanges
  while (summaries.length < wanted) {
    const entries = await redis.xrevrange(keys.summaries, end, '-', 'COUNT', 64);
    for (const [entry, fields] of entries) summaries.push(...entrySummaries(entry, fields));
    if (entries.length < 64) break;
    end = `(${entries[entries.length - 1][0]}`;
  }
  const fresh = summaries.filter((s) => Date.parse(s.at) >= cutoff);
  fresh.sort((a, b) => b.t - a.t || (a.id < b.id ? 1 : -1));
  return fresh.slice(0, limits.max).map(present);
}

/** One exchange with its headers and bodies, or undefined (unknown, trimmed, expired, or another share's). */
export async function getExchange(
  redis: Redis,
  prefix: string,
  hubId: string,
  zId: string,
  id: string,
  limits: InspectLimits,
): Promise<ExchangeDetail | undefined> {
  const at = parseExchangeId(id);
  if (!at) return undefined;
  const keys = inspectKeys(prefix, hubId, zId);
  const [summary, detail] = await Promise.all([redis.xrange(keys.summaries, at.entry, at.entry), redis.xrange(keys.details, at.entry, at.entry)]);
  if (!summary.length || !detail.length) return undefined;
  const [, sFields] = summary[0];
  const [, dFields] = detail[0];
  // the form written before batches: one exchange per entry, whose id is the entry id
  const single = sFields[0] === 's';
  if (single !== (id === at.entry)) return undefined;
  const summaries = entrySummaries(at.entry, sFields);
  const details = single ? [JSON.parse(dFields[1])] : (JSON.parse(dFields[1]) as StoredDetail[]);
  const s = summaries[at.index];
  const d = details[at.index];
  if (!s || !d || Date.parse(s.at) < Date.now() - limits.ttlMs) return undefined;
  return { ...present(s), ...detailOf(d) };
}

/** Summaries recorded after the exchange `lastId` (a reconnecting stream's Last-Event-ID), oldest first, at most `max`. */
export async function exchangesAfter(redis: Redis, prefix: string, hubId: string, zId: string, lastId: string, max: number): Promise<ExchangeSummary[]> {
  const at = parseExchangeId(lastId);
  if (!at) return [];
  const entries = await redis.xrange(inspectKeys(prefix, hubId, zId).summaries, at.entry, '+', 'COUNT', max);
  const out: ExchangeSummary[] = [];
  for (const [entry, fields] of entries) {
    // the rest of the batch the last one seen was in (an entry of the one-exchange form has nothing after it), then
    // the later batches whole: a batch's summaries are in the order of their indexes
    const from = entry === at.entry ? at.index + 1 : 0;
    for (const s of entrySummaries(entry, fields).slice(from)) out.push(present(s));
  }
  return out.slice(0, max);
}

/** A replay request an edge takes from the list, and its answer on `replyTo`. */
export interface ReplayRequest {
  replayId: string;
  hubId: string;
  zId: string;
  exchangeId: string;
  replyTo: string;
  /** Epoch ms after which nobody waits for it: an edge that takes it later drops it. */
  deadline: number;
}
export type ReplayReply =
  | { replayId: string; ok: true; exchange: ExchangeSummary }
  | { replayId: string; ok: false; status: number; error: string; message: string };
