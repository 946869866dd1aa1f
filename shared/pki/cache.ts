import { LRUCache } from 'lru-cache';
import { config } from '../config.js';

/**
 * The PKI caches (decrypted hub CA keys, issuer chains, JWT verification keys, OCSP responders): size-bounded LRUs whose entries
 * expire after HUB_PKI_CACHE_TTL, so no secret or stale key is kept for the life of the process. A rejected value
 * (a promise that failed) is dropped so the next call tries again.
 */
export function pkiCache<V extends {}>(): LRUCache<string, V> {
  const { pkiCacheMax, pkiCacheTtlMs } = config();
  return new LRUCache<string, V>({ max: pkiCacheMax, ttl: pkiCacheTtlMs, updateAgeOnGet: false });
}

/** The cached value of `key`, or the one `load` makes (kept while it does not reject). */
export function cached<V>(cache: LRUCache<string, Promise<V>>, key: string, load: () => Promise<V>): Promise<V> {
  let value = cache.get(key);
  if (!value) {
    value = load();
    cache.set(key, value);
    const entry = value;
    entry.catch(() => {
      if (cache.peek(key) === entry) cache.delete(key);
    });
  }
  return value;
}
