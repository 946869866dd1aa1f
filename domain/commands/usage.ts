import { QueryTypes } from 'sequelize';
import { db } from '../../shared/db.js';
import { badRequest } from '../../shared/errors.js';
import { insertSamples, type UsageRow } from '../../shared/metrics/store.js';

/** Largest batch one request may carry (the 1 MiB body limit holds about as many). */
const MAX_SAMPLES_PER_BATCH = 10_000;
/** How far ahead of this server's clock a sample's timestamp may be (clocks of reporting agents drift). */
const FUTURE_SKEW_MS = 60_000;

const SAMPLE_KEYS = new Set(['hubId', 'shareId', 'envZId', 'rx', 'tx', 'timestamp']);
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;

/** Milliseconds since the epoch of an RFC 3339 date-time, or undefined when it is not one (including 2026-02-30). */
function parseRfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text.toUpperCase());
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return undefined;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return undefined;
  const ms = Date.parse(m[0]);
  return Number.isNaN(ms) ? undefined : ms;
}

class SampleError extends Error {}

const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function optionalId(sample: Record<string, unknown>, key: 'shareId' | 'envZId'): string | null {
  const value = sample[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200) {
    throw new SampleError(`'${key}' must be a non-empty string of at most 200 characters (received ${describe(value)})`);
  }
  return value;
}

function count(sample: Record<string, unknown>, key: 'rx' | 'tx'): number {
  const value = sample[key];
  if (value === undefined) throw new SampleError(`'${key}' is required and must be a non-negative integer`);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new SampleError(`'${key}' must be a non-negative integer (received ${typeof value === 'number' ? value : describe(value)})`);
  }
  return value;
}

function shapeOf(raw: unknown, now: number): UsageRow {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new SampleError(`must be an object (received ${describe(raw)})`);
  const sample = raw as Record<string, unknown>;
  const unknown = Object.keys(sample).filter((k) => !SAMPLE_KEYS.has(k));
  if (unknown.length) throw new SampleError(`unknown propert${unknown.length > 1 ? 'ies' : 'y'} ${unknown.map((k) => `'${k}'`).join(', ')}`);
  if (typeof sample.hubId !== 'string' || sample.hubId === '') throw new SampleError(`'hubId' is required and must be a non-empty string`);
  const rx = count(sample, 'rx');
  const tx = count(sample, 'tx');
  if (typeof sample.timestamp !== 'string') throw new SampleError(`'timestamp' is required and must be an RFC 3339 string`);
  const at = parseRfc3339(sample.timestamp);
  if (at === undefined)
    throw new SampleError(`'timestamp' must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z (received '${sample.timestamp.slice(0, 40)}')`);
  if (at < 0) throw new SampleError(`'timestamp' ${sample.timestamp} is before 1970`);
  if (at > now + FUTURE_SKEW_MS)
    throw new SampleError(`'timestamp' ${sample.timestamp} is in the future (more than ${FUTURE_SKEW_MS / 1000} s ahead of the server clock)`);
  // RFC 3339 allows a lower-case t and z; the upper-case form is the one every parser takes
  const timestamp = sample.timestamp.toUpperCase();
  return { hubId: sample.hubId, shareId: optionalId(sample, 'shareId'), envZId: optionalId(sample, 'envZId'), rx, tx, timestamp };
}

const rejectSample = (index: number, problem: string) =>
  badRequest(`sample ${index} ($.samples[${index}]) is invalid: ${problem}; no sample of the batch was stored`);

interface ShareRow {
  id: string;
  hub_id: string;
  env_z_id: string | null;
}

/** The hubs, environments and shares (plain or IPsec) the batch names, in three queries whatever its size. */
async function lookUp(rows: UsageRow[]) {
  const distinct = (pick: (r: UsageRow) => string | null) => [...new Set(rows.map(pick).filter((v): v is string => v !== null))];
  const shareIds = distinct((r) => r.shareId);
  const shareQuery =
    'SELECT z_id AS id, hub_id, env_z_id FROM shares WHERE z_id = ANY($1::text[]) UNION ALL SELECT id, hub_id, env_z_id FROM ipsec_shares WHERE id = ANY($1::text[])';
  const select = <T extends object>(sql: string, ids: string[]) =>
    ids.length === 0 ? Promise.resolve([] as T[]) : db().query<T>(sql, { bind: [ids], type: QueryTypes.SELECT });
  const [hubs, environments, shares] = await Promise.all([
    select<{ id: string }>(
      'SELECT id FROM hubs WHERE id = ANY($1::text[])',
      distinct((r) => r.hubId),
    ),
    select<{ hub_id: string; env_z_id: string }>(
      'SELECT hub_id, env_z_id FROM environments WHERE env_z_id = ANY($1::text[])',
      distinct((r) => r.envZId),
    ),
    select<ShareRow>(shareQuery, shareIds),
  ]);
  return {
    hubs: new Set(hubs.map((h) => h.id)),
    environmentHub: new Map(environments.map((e) => [e.env_z_id, e.hub_id])),
    shares: new Map(shares.map((s) => [s.id, s])),
  };
}

/**
 * POST /admin/v1/usage: validates every sample (shape, then that its hub exists and its share and environment
 * belong to that hub) and stores the batch in one statement. The first bad sample rejects the whole batch with a
 * 400 that names its index. A sample of a share without an environment takes the share's environment.
 */
export async function ingestUsage(input: unknown, now = Date.now()): Promise<{ accepted: number }> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw badRequest(`request body must be an object with a 'samples' array`);
  const { samples, ...rest } = input as { samples?: unknown };
  const extra = Object.keys(rest);
  if (extra.length) throw badRequest(`unknown propert${extra.length > 1 ? 'ies' : 'y'} ${extra.map((k) => `'$.${k}'`).join(', ')}`);
  if (!Array.isArray(samples)) throw badRequest(`property '$.samples' is required and must be of type array (received ${describe(samples)})`);
  if (samples.length > MAX_SAMPLES_PER_BATCH)
    throw badRequest(`'$.samples' has ${samples.length} samples; at most ${MAX_SAMPLES_PER_BATCH} are allowed per request`);

  const rows = samples.map((sample, index) => {
    try {
      return shapeOf(sample, now);
    } catch (err) {
      if (err instanceof SampleError) throw rejectSample(index, err.message);
      throw err;
    }
  });
  const known = await lookUp(rows);
  rows.forEach((row, index) => {
    if (!known.hubs.has(row.hubId)) throw rejectSample(index, `hub '${row.hubId}' not found`);
    if (row.envZId !== null && known.environmentHub.get(row.envZId) !== row.hubId) {
      throw rejectSample(index, `environment '${row.envZId}' not found in hub '${row.hubId}'`);
    }
    if (row.shareId === null) return;
    const share = known.shares.get(row.shareId);
    if (!share || share.hub_id !== row.hubId) throw rejectSample(index, `share '${row.shareId}' not found in hub '${row.hubId}'`);
    if (row.envZId === null) row.envZId = share.env_z_id;
    else if (share.env_z_id !== null && share.env_z_id !== row.envZId) {
      throw rejectSample(index, `share '${row.shareId}' is hosted in environment '${share.env_z_id}', not '${row.envZId}'`);
    }
  });
  await insertSamples(rows);
  return { accepted: rows.length };
}
