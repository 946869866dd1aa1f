import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { db } from '../db.js';

/** One validated usage sample, as stored. `timestamp` is the RFC 3339 text the client sent (PostgreSQL parses it exactly). */
export interface UsageRow {
  hubId: string;
  shareId: string | null;
  envZId: string | null;
  rx: number;
  tx: number;
  timestamp: string;
}

const COPY_SAMPLES = 'COPY usage_samples (hub_id, share_id, env_z_id, ts, rx, tx, folded) FROM STDIN';

/** A value in COPY's text format: backslash escapes for the characters that delimit it, \N for null. */
function field(value: string | null): string {
  if (value === null) return '\\N';
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!) : value;
}

/**
 * The timestamp as stored: fractions of a second beyond microseconds (PostgreSQL's precision, where it would round,
 * possibly into the next minute) are cut, so that the minute computed here is the minute PostgreSQL sees.
 */
const storedTimestamp = (text: string) => (/\.\d{7}/.test(text) ? text.replace(/(\.\d{6})\d+/, '$1') : text);

function* copyChunks(rows: UsageRow[], timestamps: string[], rowsPerChunk = 1000): Generator<string> {
  for (let start = 0; start < rows.length; start += rowsPerChunk) {
    let chunk = '';
    const end = Math.min(rows.length, start + rowsPerChunk);
    for (let i = start; i < end; i++) {
      const row = rows[i];
      chunk += `${field(row.hubId)}\t${field(row.shareId)}\t${field(row.envZId)}\t${field(timestamps[i])}\t${row.rx}\t${row.tx}\tt\n`;
    }
    yield chunk;
  }
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** Bucket deltas of one tier as the columns of an unnest(): sorted by key, so that every writer locks in one order. */
interface Deltas {
  hubIds: string[];
  scopes: string[];
  scopeIds: string[];
  starts: string[];
  rx: (number | string)[];
  tx: (number | string)[];
}

type Sum = number | bigint;
/** Exact sums: numbers while they are safe integers (nearly always), bigint beyond. */
const addExact = (a: Sum, b: number): Sum => {
  if (typeof a === 'bigint') return a + BigInt(b);
  const sum = a + b;
  return Number.isSafeInteger(sum) ? sum : BigInt(a) + BigInt(b);
};

/**
 * The batch's sums per (hub, scope, scope id, bucket) for minute and hour buckets, exactly as the roll-up computes
 * them (shared/metrics/rollup.ts): every sample counts for its hub, its share (if any) and its environment (if any).
 */
function fold(rows: UsageRow[], timestamps: string[]): { minutes: Deltas; hours: Deltas } {
  const minutes = new Map<string, [string, string, string, number, Sum, Sum]>();
  const hours = new Map<string, [string, string, string, number, Sum, Sum]>();
  const add = (into: typeof minutes, hubId: string, scope: string, scopeId: string, start: number, rx: number, tx: number) => {
    // a fixed-width start keeps the string order of keys equal to their field order
    const key = `${hubId}\u0000${scope}\u0000${scopeId}\u0000${String(start).padStart(16, '0')}`;
    const bucket = into.get(key);
    if (bucket) {
      bucket[4] = addExact(bucket[4], rx);
      bucket[5] = addExact(bucket[5], tx);
    } else into.set(key, [hubId, scope, scopeId, start, rx, tx]);
  };
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const at = Date.parse(timestamps[i]);
    if (Number.isNaN(at)) throw new Error(`usage sample ${i}: timestamp '${timestamps[i]}' is not RFC 3339`);
    const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
    const hour = Math.floor(at / HOUR_MS) * HOUR_MS;
    for (const [into, start] of [[minutes, minute], [hours, hour]] as const) {
      add(into, row.hubId, 'hub', row.hubId, start, row.rx, row.tx);
      if (row.shareId !== null) add(into, row.hubId, 'share', row.shareId, start, row.rx, row.tx);
      if (row.envZId !== null) add(into, row.hubId, 'environment', row.envZId, start, row.rx, row.tx);
    }
  }
  const columns = (map: typeof minutes): Deltas => {
    const keys = [...map.keys()].sort();
    const d: Deltas = { hubIds: [], scopes: [], scopeIds: [], starts: [], rx: [], tx: [] };
    for (const key of keys) {
      const [hubId, scope, scopeId, start, rx, tx] = map.get(key)!;
      d.hubIds.push(hubId);
      d.scopes.push(scope);
      d.scopeIds.push(scopeId);
      d.starts.push(new Date(start).toISOString());
      d.rx.push(typeof rx === 'bigint' ? rx.toString() : rx);
      d.tx.push(typeof tx === 'bigint' ? tx.toString() : tx);
    }
    return d;
  };
  return { minutes: columns(minutes), hours: columns(hours) };
}

const upsert = (table: 'usage_minutes' | 'usage_hours') => `
  INSERT INTO ${table} AS b (hub_id, scope, scope_id, bucket_start, rx, tx)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int8[], $6::int8[])
  ON CONFLICT (hub_id, scope, scope_id, bucket_start) DO UPDATE SET rx = b.rx + EXCLUDED.rx, tx = b.tx + EXCLUDED.tx`;
const UPSERT_MINUTES = { name: 'usage-fold-minutes', text: upsert('usage_minutes') };
const UPSERT_HOURS = { name: 'usage-fold-hours', text: upsert('usage_hours') };
const deltaValues = (d: Deltas) => [d.hubIds, d.scopes, d.scopeIds, d.starts, d.rx, d.tx];

/** Lock conflicts between concurrent writers of the same buckets are retried (the whole transaction); others are not. */
const RETRIED = new Set(['40P01', '40001']);
const ATTEMPTS = 3;

/**
 * Stores a batch: one COPY of the raw samples and, in the same transaction, their sums added to the minute and hour
 * buckets (upserts in one fixed key order, so concurrent writers queue instead of deadlocking). All or nothing.
 * Sparklines and metrics read the buckets only, so they cost the same right after a backfill as after the roll-up.
 * The single entry point for every writer of usage (the usage API, the edge).
 */
export async function insertSamples(rows: UsageRow[]): Promise<void> {
  if (rows.length === 0) return;
  const timestamps = rows.map((r) => storedTimestamp(r.timestamp));
  const { minutes, hours } = fold(rows, timestamps);
  const manager = db().connectionManager;
  for (let attempt = 1; ; attempt++) {
    const client = (await manager.getConnection({ type: 'write' })) as pg.PoolClient;
    try {
      await client.query('BEGIN');
      await pipeline(Readable.from(copyChunks(rows, timestamps)), client.query(copyFrom(COPY_SAMPLES)));
      await client.query({ ...UPSERT_MINUTES, values: deltaValues(minutes) });
      await client.query({ ...UPSERT_HOURS, values: deltaValues(hours) });
      await client.query('COMMIT');
      return;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (attempt >= ATTEMPTS || !RETRIED.has((err as { code?: string }).code ?? '')) throw err;
    } finally {
      manager.releaseConnection(client);
    }
  }
}
