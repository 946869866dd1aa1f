/**
 * Where request inspection keeps exchanges: Redis, shared by every edge and read by the web process. Each share has
 * two streams under one hash tag (`{hub/share}`, so a cluster keeps them on one node): the summaries (what lists
 * show) and the details (headers and bodies), written together by one script so that they carry the same entry id.
 * Keys name the hub and the share: nothing of one hub is ever read through another's.
 *
 * Bounds: the summaries are trimmed with `XADD ... MAXLEN ~ HUB_INSPECT_MAX` and `XTRIM ... MINID ~ <now - TTL>`;
 * the details follow them (everything older than the oldest summary left goes); both expire after the TTL without
 * writes. `~` trims whole stream nodes, so a stream may briefly hold a few more than the limit: readers apply the
 * exact count and age.
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
 * What the summaries stream holds, in whole numbers (a fraction costs a double-to-text conversion per field): the
 * summary without its id (the stream gives it), `at` in epoch ms, the sort key `u` (when the request reached its edge,
 * epoch µs) and the duration `d` in µs for `ms`.
 */
export type StoredSummary = Omit<ExchangeSummary, 'id' | 'at' | 'ms'> & { at: number; u: number; d: number };

/** A stored summary as one JSON text, written field by field (this runs once per recorded exchange). */
export const summaryJson = (s: StoredSummary): string =>
  `{"at":${s.at},"u":${s.u},"d":${s.d},"method":${JSON.stringify(s.method)},"path":${JSON.stringify(s.path)},"status":${s.status},"rxBytes":${s.rxBytes},"txBytes":${s.txBytes},"clientAddress":${JSON.stringify(s.clientAddress)},"edge":${JSON.stringify(s.edge)}${s.replayOf === undefined ? '' : `,"replayOf":${JSON.stringify(s.replayOf)}`}}`;

export interface InspectLimits {
  max: number;
  ttlMs: number;
}

const tag = (hubId: string, zId: string) => `{${hubId}/${zId}}`;

export const inspectKeys = (prefix: string, hubId: string, zId: string) => ({
  summaries: `${prefix}:inspect:${tag(hubId, zId)}:s`,
  details: `${prefix}:inspect:${tag(hubId, zId)}:d`,
  /** Pub/sub channel of new summaries (the live view): `<id> <summary JSON>` lines, one message per batch. */
  live: `${prefix}:inspect:live:${hubId}/${zId}`,
});

/** The list edges take replay requests from, and the channel prefix of their answers. */
export const replayKeys = (prefix: string) => ({ requests: `${prefix}:inspect:replays`, replies: `${prefix}:inspect:replies:` });

/**
 * KEYS: summaries, details. ARGV: max, ttl ms, live channel, and the exchanges as one string: a summary JSON and a
 * detail JSON per exchange, each on a line of its own (JSON text never holds a raw newline). Records them in order
 * (one call per share and batch: the trims, the expiry and the one live message are paid once per batch; one string
 * argument keeps the client's work per exchange to a join); returns their entry ids when ARGV[5] is `ids`, else how many.
 */
const RECORD = `
local ids = {}
local live = {}
local text = ARGV[4]
local at = 1
while at <= #text do
  local a = string.find(text, '\\n', at, true)
  local b = string.find(text, '\\n', a + 1, true) or (#text + 1)
  local summary = string.sub(text, at, a - 1)
  local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 's', summary)
  redis.call('XADD', KEYS[2], id, 'd', string.sub(text, a + 1, b - 1))
  ids[#ids + 1] = id
  live[#live + 1] = id .. ' ' .. summary
  at = b + 1
end
local ms = tonumber(string.match(ids[#ids], '^(%d+)'))
local cutoff = ms - tonumber(ARGV[2])
if cutoff > 0 then redis.call('XTRIM', KEYS[1], 'MINID', '~', cutoff) end
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if first[1] then redis.call('XTRIM', KEYS[2], 'MINID', first[1][1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PUBLISH', ARGV[3], table.concat(live, '\\n'))
if ARGV[5] == 'ids' then return ids end
return #ids
`;

type WithRecord = Redis & { inspectRecord(...args: (string | number)[]): Promise<string[] | number> };

/** The connection with the record script defined (EVALSHA, loaded on first use). */
export function withRecordScript(redis: Redis): WithRecord {
  if (!(redis as unknown as Partial<WithRecord>).inspectRecord) redis.defineCommand('inspectRecord', { numberOfKeys: 2, lua: RECORD });
  return redis as WithRecord;
}

/**
 * One exchange as the record script reads it: its summary JSON and its detail JSON on two lines. The detail is one
 * array, `[request lines, request body, request cut, response lines, response body, response cut]` (cut: 0 or 1),
 * which the edge builds without a pair per header or an object per message.
 */
export const serializeRecord = (summary: StoredSummary, request: CapturedMessage, response: CapturedMessage): string =>
  `${summaryJson(summary)}\n${JSON.stringify([request.lines, request.body, request.bodyTruncated ? 1 : 0, response.lines, response.body, response.bodyTruncated ? 1 : 0])}`;

const pairsOf = (lines: readonly string[]): [string, string][] => {
  const out: [string, string][] = [];
  for (let i = 0; i < lines.length; i += 2) out.push([lines[i], lines[i + 1]]);
  return out;
};

/** A stored detail as the API shows it (the array an edge writes, or the object form written before it). */
export function detailOf(json: string): { request: RecordedMessage; response: RecordedMessage } {
  const parsed = JSON.parse(json) as [string[], string, number, string[], string, number] | { request: RecordedMessage; response: RecordedMessage };
  if (!Array.isArray(parsed)) return parsed;
  const [ql, qb, qt, rl, rb, rt] = parsed;
  return { request: { headers: pairsOf(ql), body: qb, bodyTruncated: qt === 1 }, response: { headers: pairsOf(rl), body: rb, bodyTruncated: rt === 1 } };
}

/** The arguments of one record call for several exchanges of one share (serialized), so that a pipeline can carry many. */
export function recordArgs(prefix: string, hubId: string, zId: string, limits: InspectLimits, serialized: string[], ids = false): (string | number)[] {
  const keys = inspectKeys(prefix, hubId, zId);
  return [keys.summaries, keys.details, limits.max, limits.ttlMs, keys.live, serialized.join('\n'), ids ? 'ids' : 'count'];
}

/** Records one serialized exchange now; resolves to its id. */
export async function recordExchange(redis: Redis, prefix: string, hubId: string, zId: string, limits: InspectLimits, serialized: string): Promise<string> {
  const [id] = (await withRecordScript(redis).inspectRecord(...recordArgs(prefix, hubId, zId, limits, [serialized], true))) as string[];
  return id;
}

type AnyStoredSummary = Omit<ExchangeSummary, 'id' | 'at' | 'ms'> & { at: number | string; u?: number; d?: number; t?: number; ms?: number };

/** A summary as the API shows it, with its sort key `t` (epoch ms) inside; reads the earlier form (ISO `at`, `t`, `ms`) too. */
export function summaryOf(id: string, json: string): ExchangeSummary & { t: number } {
  const p = JSON.parse(json) as AnyStoredSummary;
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

export const present = ({ t: _t, ...summary }: ExchangeSummary & { t?: number }): ExchangeSummary => summary;

const ENTRY_ID = /^\d{1,20}-\d{1,20}$/;
export const isEntryId = (id: string) => ENTRY_ID.test(id);

/**
 * The share's exchanges, newest first (by when they reached their edge, so that two edges' exchanges interleave as
 * they happened even when one edge's writes arrive later): at most `max`, none older than the TTL.
 */
export async function listExchanges(redis: Redis, prefix: string, hubId: string, zId: string, limits: InspectLimits): Promise<ExchangeSummary[]> {
  const keys = inspectKeys(prefix, hubId, zId);
  const cutoff = Date.now() - limits.ttlMs;
  // approximate trimming may leave up to a stream node more than the limit: read a margin and cut exactly
  const entries = await redis.xrevrange(keys.summaries, '+', '-', 'COUNT', limits.max * 2 + 100);
  const summaries = entries.map(([id, fields]) => summaryOf(id, fields[1])).filter((s) => Date.parse(s.at) >= cutoff);
  summaries.sort((a, b) => b.t - a.t || (a.id < b.id ? 1 : -1));
  return summaries.slice(0, limits.max).map(present);
}

/** One exchange with its headers and bodies, or undefined (unknown, trimmed, expired, or another share's). */
export async function getExchange(redis: Redis, prefix: string, hubId: string, zId: string, id: string, limits: InspectLimits): Promise<ExchangeDetail | undefined> {
  if (!isEntryId(id)) return undefined;
  const keys = inspectKeys(prefix, hubId, zId);
  const [summary, detail] = await Promise.all([redis.xrange(keys.summaries, id, id), redis.xrange(keys.details, id, id)]);
  if (!summary.length || !detail.length) return undefined;
  const s = summaryOf(id, summary[0][1][1]);
  if (Date.parse(s.at) < Date.now() - limits.ttlMs) return undefined;
  const d = detailOf(detail[0][1][1]);
  return { ...present(s), request: d.request, response: d.response };
}

/** Header names whose values are never kept: credentials and the client certificate. */
export const REDACTED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-client-certificate-name',
  'x-client-certificate-fingerprint',
  'x-client-cert',
  'x-ssl-client-cert',
  'ssl-client-cert',
  'x-forwarded-client-cert',
]);
export const REDACTED = '[redacted]';

/** The lengths of those names: most header names are not lower-cased to be looked up. */
const REDACTED_LENGTHS = new Set([...REDACTED_HEADERS].map((name) => name.length));

/**
 * Flat header lines (name, value, name, value...) with credentials replaced: the same array when it holds none (it is
 * only read), else a copy (the caller's lines, which may still be sent, are never changed).
 */
export function redactLines(lines: readonly string[]): readonly string[] {
  let out: string[] | undefined;
  for (let i = 0; i < lines.length; i += 2) {
    const name = lines[i];
    if (!REDACTED_LENGTHS.has(name.length) || !REDACTED_HEADERS.has(name.toLowerCase())) continue;
    out ??= lines.slice();
    out[i + 1] = REDACTED;
  }
  return out ?? lines;
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
export type ReplayReply = { replayId: string; ok: true; exchange: ExchangeSummary } | { replayId: string; ok: false; status: number; error: string; message: string };
