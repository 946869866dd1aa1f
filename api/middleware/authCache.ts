import { LRUCache } from 'lru-cache';
import { listen, type Listener } from '../../shared/pgListen.js';

/**
 * The web process's cache of API keys (by token digest) and hubs (by id), so that an authenticated request costs no
 * database round trip of its own. Entries are dropped on every web process at once when a key or hub changes: the
 * trigger of migration 0600 NOTIFYs `edgehub_auth` on commit, and each process LISTENs (shared/pgListen.ts).
 *
 * - While the LISTEN connection is down (or before it is up) nothing is read from or written to the cache: every
 *   request goes to the database, as it did without a cache.
 * - A value loaded while a notification arrived is not stored (the `epoch` check), so a read that started before a
 *   revocation cannot put the old key back after the notification dropped it.
 * - Entries also expire after a TTL and the cache is bounded: a backstop, never the mechanism.
 * - Only what exists is cached; an unknown token always goes to the database.
 */

const AUTH_CHANNEL = 'edgehub_auth';

export interface CachedKey {
  id: string;
  hubId: string;
  username: string;
}

export interface CachedHub {
  id: string;
  name: string;
  features: { ipsec: boolean };
}

const TTL_MS = 5 * 60_000;
const keys = new LRUCache<string, CachedKey>({ max: 20_000, ttl: TTL_MS });
const hubs = new LRUCache<string, CachedHub>({ max: 20_000, ttl: TTL_MS });
let epoch = 0;
let listener: Listener | undefined;

function onMessage(payload: string) {
  epoch++;
  const colon = payload.indexOf(':');
  const kind = payload.slice(0, colon);
  const id = payload.slice(colon + 1);
  if (kind === 'key') keys.delete(id);
  else if (kind === 'hub') hubs.delete(id);
  else onReset();
}

function onReset() {
  epoch++;
  keys.clear();
  hubs.clear();
}

/**
 * Drops an entry in this process at once (the process that made the change answers only after this); the others
 * drop theirs when the notification of the same change reaches them.
 */
export function forgetKey(digestHex: string): void {
  onMessage(`key:${digestHex}`);
}

export function forgetHub(id: string): void {
  onMessage(`hub:${id}`);
}

/** Starts listening for changes (idempotent); resolves once the cache is live. */
export async function startAuthCache(): Promise<void> {
  listener ??= listen(AUTH_CHANNEL, onMessage, onReset);
  await listener.ready();
}

export async function stopAuthCache(): Promise<void> {
  const l = listener;
  listener = undefined;
  onReset();
  await l?.close();
}

async function through<T extends object>(cache: LRUCache<string, T>, id: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
  if (!listener?.live) return load();
  const hit = cache.get(id);
  if (hit !== undefined) return hit;
  const before = epoch;
  const value = await load();
  if (value !== undefined && listener?.live && epoch === before) cache.set(id, value);
  return value;
}

/** The cached entry, or undefined when there is none or the cache is not live (then `through` loads it). */
const peek = <T extends object>(cache: LRUCache<string, T>, id: string): T | undefined => (listener?.live ? cache.get(id) : undefined);

/** The key for this digest when it is cached (no promise: an authenticated request's usual case). */
export const peekKey = (digestHex: string): CachedKey | undefined => peek(keys, digestHex);

/** The hub when it is cached. */
export const peekHub = (id: string): CachedHub | undefined => peek(hubs, id);

/** The unrevoked key whose token has this SHA-256 (hex), from the cache or from `load`. */
export const cachedKey = (digestHex: string, load: () => Promise<CachedKey | undefined>) => through(keys, digestHex, load);

/** The hub with this id, from the cache or from `load`. */
export const cachedHub = (id: string, load: () => Promise<CachedHub | undefined>) => through(hubs, id, load);
