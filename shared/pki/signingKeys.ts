import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { LRUCache } from 'lru-cache';
import { QueryTypes } from 'sequelize';
import { db, withTransaction } from '../db.js';
import { SigningKey } from '../models/SigningKey.js';
import { decryptSecret, encryptSecret } from '../secrets.js';
import { pkiCache } from './cache.js';

/**
 * ES256 keys that sign enrollment JWTs. Exactly one is ACTIVE (a partial unique index says so); a RETIRED key stays
 * published while `latest_jwt_expiry` (the latest `exp` it signed) is in the future, then rotation deletes it.
 */

export interface ActiveKey {
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
  await db().query(
    `INSERT INTO signing_keys (kid, status, public_jwk, private_key_sealed) VALUES (:kid, :status, :jwk, :sealed) ON CONFLICT DO NOTHING`,
    { replacements: { kid: row.kid, status, jwk: JSON.stringify(row.publicJwk), sealed: row.privateKeySealed }, type: QueryTypes.INSERT },
  );
  return row.kid;
}

/** The ACTIVE key row, created on first use (two processes racing agree on one: the unique index picks it). */
export async function ensureActiveKeyRow(): Promise<SigningKey> {
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

export function forgetActiveKey(): void {
  cached = undefined;
}

/**
 * Records that `kid` signs a JWT valid until `expiresAt`, so the key stays published until then. False when the key
 * is gone (dropped by a rotation since we read it): the caller re-reads the active key.
 */
export async function recordJwtExpiry(kid: string, expiresAt: Date): Promise<boolean> {
  const rows = await db().query<{ kid: string }>(
    `UPDATE signing_keys SET latest_jwt_expiry = GREATEST(COALESCE(latest_jwt_expiry, :exp), :exp) WHERE kid = :kid RETURNING kid`,
    { replacements: { kid, exp: expiresAt }, type: QueryTypes.SELECT },
  );
  return rows.length === 1;
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
  return result;
}

/** Deletes retired keys that can no longer verify any unexpired JWT. */
export async function dropExpiredKeys(): Promise<number> {
  const rows = await db().query<{ kid: string }>(
    `DELETE FROM signing_keys WHERE status = 'RETIRED' AND (latest_jwt_expiry IS NULL OR latest_jwt_expiry <= now()) RETURNING kid`,
    { type: QueryTypes.SELECT },
  );
  return rows.length;
}

/** The public key set: the active key and every retired key some unexpired JWT may still name. */
export async function publishedKeys(): Promise<Record<string, string>[]> {
  await ensureActiveKeyRow();
  const rows = await db().query<{ public_jwk: Record<string, string> }>(
    `SELECT public_jwk FROM signing_keys WHERE status = 'ACTIVE' OR latest_jwt_expiry > now() ORDER BY created_at DESC`,
    { type: QueryTypes.SELECT },
  );
  return rows.map((r) => r.public_jwk);
}

/** Public keys by kid, bounded and expiring, so a key dropped by a rotation stops verifying here too. */
let verificationKeys: LRUCache<string, KeyObject> | undefined;

/** The public key of a published `kid`, or undefined (read from the database on a miss). */
export async function verificationKey(kid: string): Promise<KeyObject | undefined> {
  verificationKeys ??= pkiCache<KeyObject>();
  const known = verificationKeys.get(kid);
  if (known) return known;
  const [row] = await db().query<{ public_jwk: JsonWebKey }>(
    `SELECT public_jwk FROM signing_keys WHERE kid = :kid AND (status = 'ACTIVE' OR latest_jwt_expiry > now())`,
    { replacements: { kid }, type: QueryTypes.SELECT },
  );
  if (!row) return undefined;
  const key = createPublicKey({ key: row.public_jwk, format: 'jwk' });
  verificationKeys.set(kid, key);
  return key;
}
