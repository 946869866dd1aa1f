import * as crypto from 'node:crypto';
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { config } from './config.js';

const VERSION = 'v1';

/** One AES-256-GCM sealing: a random 96-bit IV, the ciphertext and the 128-bit tag. */
interface Sealed {
  iv: Buffer;
  data: Buffer;
  tag: Buffer;
}

/** AES-256-GCM of `plain` under `key`; `aad` (additional data) binds it to a purpose without being stored in it. */
export function seal(key: Buffer, plain: string | Buffer, aad?: Buffer): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad) cipher.setAAD(aad);
  const data = Buffer.concat([cipher.update(plain), cipher.final()]);
  return { iv, data, tag: cipher.getAuthTag() };
}

/** The plaintext of `sealed`; throws when the key, the additional data or any byte differs. */
export function open(key: Buffer, sealed: Sealed, aad?: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(sealed.tag);
  return Buffer.concat([decipher.update(sealed.data), decipher.final()]);
}

/** A secret at rest, sealed with HUB_SECRET_KEY. Output: `v1.<iv>.<tag>.<ciphertext>` (base64url). */
export function encryptSecret(plain: string | Buffer, key: Buffer = config().secretKey): string {
  const { iv, tag, data } = seal(key, plain);
  return [VERSION, iv.toString('base64url'), tag.toString('base64url'), data.toString('base64url')].join('.');
}

function decryptSecretBuffer(sealed: string, key: Buffer = config().secretKey): Buffer {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || data === undefined) throw new Error('sealed secret has an unknown format');
  return open(key, { iv: Buffer.from(iv, 'base64url'), tag: Buffer.from(tag, 'base64url'), data: Buffer.from(data, 'base64url') });
}

export const decryptSecret = (sealed: string, key?: Buffer): string => decryptSecretBuffer(sealed, key).toString('utf8');

/** SHA-256 as a Buffer: node:crypto's one-shot `hash()` where there is one (Node >= 20.12), which makes no Hash object. */
export const sha256: (value: string | Buffer) => Buffer =
  typeof crypto.hash === 'function' ? (value) => crypto.hash('sha256', value, 'buffer') : (value) => createHash('sha256').update(value).digest();

/** Constant-time comparison of two strings of any length (compares their digests). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
