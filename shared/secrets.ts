import * as crypto from 'node:crypto';
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { config } from './config.js';

const VERSION = 'v1';

/** AES-256-GCM with HUB_SECRET_KEY. Output: `v1.<iv>.<tag>.<ciphertext>` (base64url). */
export function encryptSecret(plain: string | Buffer, key: Buffer = config().secretKey): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plain), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
}

export function decryptSecretBuffer(sealed: string, key: Buffer = config().secretKey): Buffer {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || data === undefined) throw new Error('sealed secret has an unknown format');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]);
}

export const decryptSecret = (sealed: string, key?: Buffer): string => decryptSecretBuffer(sealed, key).toString('utf8');

/** SHA-256 as a Buffer: node:crypto's one-shot `hash()` where there is one (Node >= 20.12), which makes no Hash object. */
export const sha256: (value: string | Buffer) => Buffer =
  typeof crypto.hash === 'function' ? (value) => crypto.hash('sha256', value, 'buffer') : (value) => createHash('sha256').update(value).digest();

/** Constant-time comparison of two strings of any length (compares their digests). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
