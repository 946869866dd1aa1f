/**
 * Reading exchanges back from the inspection store (./store.ts tells its layout): lists, one exchange with its detail,
 * the exchanges after one, and the live feed's summaries; both forms an entry may have (a batch, or one exchange as
 * written before batches).
 */
import type { Redis } from 'ioredis';
import {
  type ExchangeDetail,
  type ExchangeSummary,
  type InspectLimits,
  exchangeId,
  inspectKeys,
  parseExchangeId,
  type RecordedMessage,
  type StoredDetail,
} from './store.js';

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
function entrySummaries(entry: string, fields: string[]): (ExchangeSummary & { t: number })[] {
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
