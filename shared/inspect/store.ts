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
 *
 * This file holds the shapes and the keys; ./record.ts writes (the record script and its bounds), ./read.ts reads.
 */

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

/** An exchange's id: its batch's entry id and its place in the batch. */
export const exchangeId = (entry: string, index: number) => `${entry}.${index}`;

/** An entry id, and an index written as exchangeId writes it (no leading zero): one exchange, one id. */
const EXCHANGE_ID = /^(\d{1,20}-\d{1,20})(?:\.(0|[1-9]\d{0,3}))?$/;

/** The entry id and index an exchange id names, or undefined for anything else. */
export function parseExchangeId(id: string): { entry: string; index: number } | undefined {
  const m = EXCHANGE_ID.exec(id);
  return m ? { entry: m[1], index: m[2] === undefined ? 0 : Number(m[2]) } : undefined;
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
