import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { LRUCache } from 'lru-cache';
import { QueryTypes } from 'sequelize';
import { db, withTransaction } from '../../shared/db.js';
import { SigningKey } from '../models/SigningKey.js';
import { decryptSecret, encryptSecret } from '../../shared/secrets.js';
import { config } from '../../shared/config.js';
import { pkiCache } from '../../shared/pki/cache.js';
import { dispatch } from '../jobs/enqueue.js';
import { Execution } from '../models/Execution.js';
import { ROTATE_JOB, waitForPkiJob } from './pkiJobs.js';
import { invalidState, notFound } from '../../shared/errors.js';

/**
 * ES256 keys that sign enrollment JWTs. Exactly one is ACTIVE (a partial unique index says so); a RETIRED key stays
 * published while `latest_jwt_expiry` (the latest `exp` it signed) is in the future, then rotation deletes it.
 */

interface ActiveKey {
  kid: string;
  privateKey: KeyObject;
}

/** How long a process signs with the key it last read before re-reading which key is active. */
const ACTIVE_KEY_TTL_MS = 5_000;

async function newKeyRow(): Promise<{ kid: string; publicJwk: Record<string, string>; privateKeySealed: string }> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const jwk = publicKey.export({ format: 'jwk' }) as Record<string, string>;
  const kid = await calculateJwkThumbprint(jwk as JWK);
  const publicJwk = { kty: 'EC', crv: 'P-256', kid, use: 'sig', alg: 'ES256', x: jwk.x, y: jwk.y };
  return { kid, publicJwk, privateKeySealed: encryptSecret(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string) };
}

async function insertKey(status: 'ACTIVE'): Promise<string> {
  const row = await newKeyRow();
  await db().query(`INSERT INTO signing_keys (kid, status, public_jwk, private_key_sealed) VALUES (:kid, :status, :jwk, :sealed) ON CONFLICT DO NOTHING`, {
    replacements: { kid: row.kid, status, jwk: JSON.stringify(row.publicJwk), sealed: row.privateKeySealed },
    type: QueryTypes.INSERT,
  });
  return row.kid;
}

/** The ACTIVE key row, created on first use (two processes racing agree on one: the unique index picks it). */
async function ensureActiveKeyRow(): Promise<SigningKey> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const active = await SigningKey.findOne({ where: { status: 'ACTIVE' } });
    if (active) return active;
    await insertKey('ACTIVE');
  }
  throw new Error('no active signing key could be created');
}

let cached: { key: ActiveKey; readAt: number } | undefined;

/** The key new JWTs are signed with (decrypted, cached for a few seconds). */
export async function activeSigningKey(options: { fresh?: boolean } = {}): Promise<ActiveKey> {
  if (!options.fresh && cached && Date.now() - cached.readAt < ACTIVE_KEY_TTL_MS) return cached.key;
  const row = await ensureActiveKeyRow();
  const key = cached?.key.kid === row.kid ? cached.key : { kid: row.kid, privateKey: createPrivateKey(decryptSecret(row.privateKeySealed)) };
  cached = { key, readAt: Date.now() };
  return key;
}

function forgetActiveKey(): void {
  cached = undefined;
}

/**
 * Records that `kid` signs a JWT valid until `expiresAt`, so the key stays published until then. False when the key
 * is gone (dropped by a rotation since we read it): the caller re-reads the active key.
 */
async function recordJwtExpiry(kid: string, expiresAt: Date): Promise<boolean> {
  const rows = await db().query<{ kid: string }>(
    `UPDATE signing_keys SET latest_jwt_expiry = GREATEST(COALESCE(latest_jwt_expiry, :exp), :exp) WHERE kid = :kid AND status <> 'REVOKED' RETURNING kid`,
    { replacements: { kid, exp: expiresAt }, type: QueryTypes.SELECT },
  );
  return rows.length === 1;
}

/**
 * The active key to sign a JWT valid until `expiresAt`, with that expiry recorded first (so the key can never be
 * dropped while the JWT is valid); a key dropped by a rotation since it was read is read again (up to three tries).
 */
export async function signingKeyFor(expiresAt: Date): Promise<ActiveKey> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const key = await activeSigningKey({ fresh: attempt > 0 });
    if (await recordJwtExpiry(key.kid, expiresAt)) return key;
  }
  throw new Error('the signing key vanished while signing');
}

/**
 * Retires `supersedes` and activates a new key, in one transaction. When `supersedes` is no longer the active key
 * someone rotated already: nothing changes and the current kid is returned. Retired keys whose JWTs have all expired
 * are deleted.
 */
export async function rotateSigningKey(supersedes: string): Promise<{ kid: string; rotated: boolean }> {
  const fresh = await newKeyRow();
  const result = await withTransaction(async (transaction) => {
    const retired = await db().query<{ kid: string }>(
      `UPDATE signing_keys SET status = 'RETIRED', retired_at = now() WHERE kid = :kid AND status = 'ACTIVE' RETURNING kid`,
      { replacements: { kid: supersedes }, type: QueryTypes.SELECT, transaction },
    );
    if (retired.length === 0) {
      const active = await SigningKey.findOne({ where: { status: 'ACTIVE' }, transaction });
      return { kid: active?.kid ?? '', rotated: false };
    }
    await db().query(`INSERT INTO signing_keys (kid, status, public_jwk, private_key_sealed) VALUES (:kid, 'ACTIVE', :jwk, :sealed)`, {
      replacements: { kid: fresh.kid, jwk: JSON.stringify(fresh.publicJwk), sealed: fresh.privateKeySealed },
      type: QueryTypes.INSERT,
      transaction,
    });
    return { kid: fresh.kid, rotated: true };
  });
  await dropExpiredKeys();
  forgetActiveKey();
  forgetPublishedKeys();
  return result;
}

/**
 * Revokes a key at once: it leaves the JWKS and verifies nothing (its JWTs stop working; their tokens stay valid and
 * get a new JWT from the active key). Revoking the active key activates a new one in the same transaction.
 */
async function revokeSigningKey(
  kid: string,
): Promise<{ kid: string; status: 'REVOKED'; revokedAt: Date; activeKid: string } | { refused: string } | undefined> {
  const fresh = await newKeyRow();
  const result = await withTransaction(async (transaction) => {
    const [row] = await db().query<{ status: string }>(`SELECT status FROM signing_keys WHERE kid = :kid FOR UPDATE`, {
      replacements: { kid },
      type: QueryTypes.SELECT,
      transaction,
    });
    if (!row) return undefined;
    if (row.status === 'REVOKED') return { refused: row.status };
    const [revoked] = await db().query<{ revoked_at: Date }>(
      `UPDATE signing_keys SET status = 'REVOKED', revoked_at = now(), retired_at = COALESCE(retired_at, now()) WHERE kid = :kid RETURNING revoked_at`,
      { replacements: { kid }, type: QueryTypes.SELECT, transaction },
    );
    if (row.status === 'ACTIVE') {
      await db().query(`INSERT INTO signing_keys (kid, status, public_jwk, private_key_sealed) VALUES (:kid, 'ACTIVE', :jwk, :sealed)`, {
        replacements: { kid: fresh.kid, jwk: JSON.stringify(fresh.publicJwk), sealed: fresh.privateKeySealed },
        type: QueryTypes.INSERT,
        transaction,
      });
    }
    const active = await SigningKey.findOne({ where: { status: 'ACTIVE' }, transaction });
    return { kid, status: 'REVOKED' as const, revokedAt: revoked.revoked_at, activeKid: active?.kid ?? '' };
  });
  forgetActiveKey();
  forgetPublishedKeys();
  verificationKeys?.delete(kid);
  return result;
}

/** Deletes retired keys that can no longer verify any unexpired JWT. */
async function dropExpiredKeys(): Promise<number> {
  const rows = await db().query<{ kid: string }>(
    `DELETE FROM signing_keys WHERE status = 'RETIRED' AND (latest_jwt_expiry IS NULL OR latest_jwt_expiry <= now()) RETURNING kid`,
    { type: QueryTypes.SELECT },
  );
  return rows.length;
}

/**
 * How long this process trusts what it read about the keys (HUB_SIGNING_KEY_CACHE_MS, default 5 s): a rotation,
 * revocation or expiry that another process wrote reaches every web process within that time.
 */
let cacheMs: number | undefined;
const keyCacheMs = () => (cacheMs ??= config().security.signingKeyCacheMs);

/** The published keys: the active key and every retired (not revoked) key some unexpired JWT may still name. */
const PUBLISHED = `(status = 'ACTIVE' OR (status = 'RETIRED' AND latest_jwt_expiry > now()))`;

let published: { keys: Promise<Record<string, string>[]>; readAt: number } | undefined;

/** The public key set, cached in process for keyCacheMs() and dropped on a rotation or revocation here. */
export function publishedKeys(): Promise<Record<string, string>[]> {
  if (published && Date.now() - published.readAt < keyCacheMs()) return published.keys;
  const keys = (async () => {
    await ensureActiveKeyRow();
    const rows = await db().query<{ public_jwk: Record<string, string> }>(`SELECT public_jwk FROM signing_keys WHERE ${PUBLISHED} ORDER BY created_at DESC`, {
      type: QueryTypes.SELECT,
    });
    return rows.map((r) => r.public_jwk);
  })();
  const entry = { keys, readAt: Date.now() };
  published = entry;
  keys.catch(() => {
    if (published === entry) published = undefined;
  });
  return keys;
}

function forgetPublishedKeys(): void {
  published = undefined;
}

/**
 * kid -> its public key, or null for a kid that is not published (a negative entry), with when it was read. Bounded
 * (HUB_PKI_CACHE_MAX, least recently used out): unknown kids are attacker-chosen.
 */
let verificationKeys: LRUCache<string, { key: KeyObject | null; readAt: number }> | undefined;

/**
 * The public key of a published `kid`, or undefined. Both answers are kept for keyCacheMs(): a key that left the
 * database (rotation, expiry, revocation by any process) stops verifying within that time, and a flood of JWTs
 * naming an unknown kid costs one query per kid and period, not one per request.
 */
export async function verificationKey(kid: string): Promise<KeyObject | undefined> {
  verificationKeys ??= pkiCache<{ key: KeyObject | null; readAt: number }>();
  const known = verificationKeys.get(kid);
  if (known && Date.now() - known.readAt < keyCacheMs()) return known.key ?? undefined;
  const [row] = await db().query<{ public_jwk: JsonWebKey }>(`SELECT public_jwk FROM signing_keys WHERE kid = :kid AND ${PUBLISHED}`, {
    replacements: { kid },
    type: QueryTypes.SELECT,
  });
  const key = row ? (known?.key ?? createPublicKey({ key: row.public_jwk, format: 'jwk' })) : null;
  verificationKeys.set(kid, { key, readAt: Date.now() });
  return key ?? undefined;
}

/**
 * Asks the worker to rotate the active signing key. The execution (and so the BullMQ job) id names the key being
 * superseded, so two requests for one rotation (two clock ticks, a retried request) are one job; the worker's
 * conditional update is the second guard. A FAILED rotation does not block the next one: the next request takes the
 * next id in the series (`rotate-signing-key-<kid>-2`, `-3`, ...), so there is one rotation at a time and any
 * number over time.
 */
export async function requestRotation(createdBy: string): Promise<Execution>;
/** Only while `supersedes` is still the active key (undefined when another replaced it meanwhile). */
export async function requestRotation(createdBy: string, supersedes: string): Promise<Execution | undefined>;
export async function requestRotation(createdBy: string, supersedes?: string): Promise<Execution | undefined> {
  const active = await ensureActiveKeyRow();
  if (supersedes !== undefined && active.kid !== supersedes) return undefined;
  const base = `rotate-signing-key-${active.kid}`;
  const tried = (
    await Execution.findAll({ where: { resourceType: 'signingKey', resourceId: active.kid, type: ROTATE_JOB }, attributes: ['id', 'status'] })
  ).filter((e) => e.id === base || (e.id.startsWith(`${base}-`) && /^\d+$/.test(e.id.slice(base.length + 1))));
  const unfinished = tried.find((e) => e.status !== 'FAILED');
  const id = unfinished?.id ?? (tried.length === 0 ? base : `${base}-${tried.length + 1}`);
  await Execution.bulkCreate(
    [
      {
        id,
        processId: id,
        hubId: null,
        type: ROTATE_JOB,
        resourceType: 'signingKey',
        resourceId: active.kid,
        status: 'QUEUED',
        payload: { supersedes: active.kid },
        createdBy,
      },
    ],
    { ignoreDuplicates: true },
  );
  const execution = (await Execution.findByPk(id)) as Execution;
  if (execution.status === 'QUEUED' || execution.status === 'RUNNING') await dispatch(execution);
  return execution;
}

/** The operator's rotation: waits for the job and answers with the new kid. */
export async function rotateNow(createdBy: string): Promise<{ kid: string; previousKid: string }> {
  const execution = await requestRotation(createdBy);
  const result = execution.status === 'SUCCEEDED' ? (execution.result as { kid: string }) : await waitForPkiJob<{ kid: string }>(execution.processId);
  forgetActiveKey();
  forgetPublishedKeys();
  return { kid: result.kid, previousKid: String(execution.payload.supersedes) };
}

/** The operator's revocation of a (compromised) key: 404 for an unknown kid, 400 for one already revoked. */
export async function revokeNow(kid: string): Promise<{ kid: string; status: 'REVOKED'; revokedAt: Date; activeKid: string }> {
  const result = await revokeSigningKey(kid);
  if (!result) throw notFound('signing key', kid);
  if ('refused' in result) throw invalidState('signing key', result.refused, 'revoke');
  return result;
}
