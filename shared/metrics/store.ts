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

const COPY_SAMPLES = 'COPY usage_samples (hub_id, share_id, env_z_id, ts, rx, tx) FROM STDIN';

/** A value in COPY's text format: backslash escapes for the characters that delimit it, \N for null. */
function field(value: string | null): string {
  if (value === null) return '\\N';
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!) : value;
}

function* copyChunks(rows: UsageRow[], rowsPerChunk = 1000): Generator<string> {
  for (let start = 0; start < rows.length; start += rowsPerChunk) {
    let chunk = '';
    for (const row of rows.slice(start, start + rowsPerChunk)) {
      chunk += `${field(row.hubId)}\t${field(row.shareId)}\t${field(row.envZId)}\t${field(row.timestamp)}\t${row.rx}\t${row.tx}\n`;
    }
    yield chunk;
  }
}

/**
 * Stores a batch with one COPY (the fastest way into PostgreSQL; bench/ingest.ts compares it with a multi-row
 * INSERT). COPY is one statement: the batch is stored whole or not at all.
 */
export async function insertSamples(rows: UsageRow[]): Promise<void> {
  if (rows.length === 0) return;
  const manager = db().connectionManager;
  const client = (await manager.getConnection({ type: 'write' })) as pg.PoolClient;
  try {
    await pipeline(Readable.from(copyChunks(rows)), client.query(copyFrom(COPY_SAMPLES)));
  } finally {
    manager.releaseConnection(client);
  }
}
