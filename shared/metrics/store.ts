import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { from as copyFrom } from 'pg-copy-streams';
import { withConnection } from '../db.js';

/** One validated usage sample, as stored. `timestamp` is the RFC 3339 text the client sent (PostgreSQL parses it exactly). */
export interface UsageRow {
  hubId: string;
  shareId: string | null;
  envZId: string | null;
  rx: number;
  tx: number;
  timestamp: string;
}

const COPY_SAMPLES = 'COPY usage_samples (hub_id, share_id, env_z_id, ts, rx, tx, hours_folded) FROM STDIN';

/** A value in COPY's text format: backslash escapes for the characters that delimit it, \N for null. */
function field(value: string | null): string {
  if (value === null) return '\\N';
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!) : value;
}

/**
 * The timestamp as stored: fractions of a second beyond microseconds (PostgreSQL's precision, where it would round,
 * possibly into the next hour) are cut, so that the hour computed here is the hour PostgreSQL sees.
 */
const storedTimestamp = (text: string): string => (/\.\d{7}/.test(text) ? text.replace(/(\.\d{6})\d+/, '$1') : text);

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

const HOUR_MS = 3_600_000;

/** Hour-bucket deltas as the columns of an unnest(), sorted by key so that every writer locks buckets in one order. */
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

interface Bucket {
  hubId: string;
  scope: string;
  scopeId: string;
  hour: number;
  rx: Sum;
  tx: Sum;
}

/**
 * The batch's sums per (hub, scope, scope id, hour), exactly as the roll-up computes them (workers/rollup.ts):
 * every sample counts for its hub, its share (if any) and its environment (if any).
 */
function foldHours(rows: UsageRow[], timestamps: string[]): Deltas {
  const buckets = new Map<string, Bucket>();
  const add = (hubId: string, scope: string, scopeId: string, hour: number, rx: number, tx: number) => {
    const key = `${hubId}\u0000${scope}\u0000${scopeId}\u0000${hour}`;
    const bucket = buckets.get(key);
    if (bucket === undefined) buckets.set(key, { hubId, scope, scopeId, hour, rx, tx });
    else {
      bucket.rx = addExact(bucket.rx, rx);
      bucket.tx = addExact(bucket.tx, tx);
    }
  };
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const at = Date.parse(timestamps[i]);
    if (Number.isNaN(at)) throw new Error(`usage sample ${i}: timestamp '${timestamps[i]}' is not RFC 3339`);
    const hour = Math.floor(at / HOUR_MS) * HOUR_MS;
    add(row.hubId, 'hub', row.hubId, hour, row.rx, row.tx);
    if (row.shareId !== null) add(row.hubId, 'share', row.shareId, hour, row.rx, row.tx);
    if (row.envZId !== null) add(row.hubId, 'environment', row.envZId, hour, row.rx, row.tx);
  }
  const sorted = [...buckets.values()].sort((a, b) =>
    a.hubId < b.hubId
      ? -1
      : a.hubId > b.hubId
        ? 1
        : a.scope < b.scope
          ? -1
          : a.scope > b.scope
            ? 1
            : a.scopeId < b.scopeId
              ? -1
              : a.scopeId > b.scopeId
                ? 1
                : a.hour - b.hour,
  );
  const d: Deltas = { hubIds: [], scopes: [], scopeIds: [], starts: [], rx: [], tx: [] };
  for (const b of sorted) {
    d.hubIds.push(b.hubId);
    d.scopes.push(b.scope);
    d.scopeIds.push(b.scopeId);
    d.starts.push(new Date(b.hour).toISOString());
    d.rx.push(typeof b.rx === 'bigint' ? b.rx.toString() : b.rx);
    d.tx.push(typeof b.tx === 'bigint' ? b.tx.toString() : b.tx);
  }
  return d;
}

const UPSERT_HOURS = {
  name: 'usage-fold-hours',
  text: `INSERT INTO usage_hours AS b (hub_id, scope, scope_id, bucket_start, rx, tx)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int8[], $6::int8[])
    ON CONFLICT (hub_id, scope, scope_id, bucket_start) DO UPDATE SET rx = b.rx + EXCLUDED.rx, tx = b.tx + EXCLUDED.tx`,
};

/** Lock conflicts between concurrent writers of the same buckets are retried (the whole transaction); others are not. */
const RETRIED = new Set(['40P01', '40001']);
const ATTEMPTS = 3;

/**
 * Stores a batch: one COPY of the raw samples (marked `hours_folded`) and, in the same transaction, their hourly sums
 * added to the hour buckets (upserts in one fixed key order, so concurrent writers queue instead of deadlocking). All
 * or nothing. Sparklines and other hourly windows read the hour buckets only, so they cost the same right after a
 * backfill as after the roll-up; the roll-up still builds the minute buckets. The single entry point for every writer
 * of usage (the usage API, the edge).
 */
export async function insertSamples(rows: UsageRow[]): Promise<void> {
  if (rows.length === 0) return;
  const timestamps = rows.map((r) => storedTimestamp(r.timestamp));
  const hours = foldHours(rows, timestamps);
  for (let attempt = 1; ; attempt++) {
    try {
      return await withConnection(async (client) => {
        try {
          await client.query('BEGIN');
          await pipeline(Readable.from(copyChunks(rows, timestamps)), client.query(copyFrom(COPY_SAMPLES)));
          await client.query({ ...UPSERT_HOURS, values: [hours.hubIds, hours.scopes, hours.scopeIds, hours.starts, hours.rx, hours.tx] });
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      });
    } catch (err) {
      if (attempt >= ATTEMPTS || !RETRIED.has((err as { code?: string }).code ?? '')) throw err;
    }
  }
}
