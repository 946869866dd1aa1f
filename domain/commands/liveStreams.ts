/**
 * The live request streams (`GET H/shares/{id}/requests/live`) of this web process: admitted within bounds, and
 * ended when they must be.
 *
 * - Bounds: per API key (HUB_INSPECT_LIVE_MAX) and per hub (HUB_INSPECT_LIVE_HUB_MAX) over every web process, kept
 *   in Redis as sorted sets of leases (a member per open stream, scored by when its lease ends: renewed every
 *   RENEW_MS while the stream is open, removed when it ends, gone by itself LEASE_MS after a process died), and per
 *   process (HUB_INSPECT_LIVE_PROCESS_MAX, in memory). Past any of them: 429 `too_many_requests`.
 * - Lifetime: a stream ends after HUB_INSPECT_LIVE_LIFETIME; the client's EventSource reconnects with Last-Event-ID
 *   (and is admitted, and authenticated, anew).
 * - Revocation: a stream ends within 2 s of its API key's revocation, its hub's deletion or its share's deletion.
 *   While streams are open the process LISTENs on the channels those changes are announced on (edgehub_auth: API
 *   keys and hubs, migration 0600; edgehub_edge: shares, migration 0500). A share's deletion ends its streams at
 *   once; any change of a key or hub has the open streams' keys, hubs and shares read again (one query each, for all
 *   of them). While a LISTEN connection is down, or not up yet, they are read again every POLL_MS instead.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { config } from '../../shared/config.js';
import { preparedQuery } from '../../shared/db.js';
import { refusal, unavailable } from '../../shared/errors.js';
import { logger } from '../../shared/logger.js';
import { listen, type Listener } from '../../shared/pgListen.js';
import { readyRedis } from '../../shared/redis.js';

/** The owner of a stream: the API key (`admin` for the operator's token), its hub, the share. */
export interface StreamOwner {
  keyId: string;
  hubId: string;
  zId: string;
}

export const OPERATOR_KEY = 'admin';

interface OpenStream extends StreamOwner {
  member: string;
  end: () => void;
  lifetime?: NodeJS.Timeout;
  /** Counted in Redis (its lease is held). */
  admitted: boolean;
}

const LEASE_MS = 60_000;
const RENEW_MS = 20_000;
const POLL_MS = 1000;
/** The channels of migration 0600 (API keys, hubs) and 0500 (shares: `{table, op, hubId, id}`). */
const AUTH_CHANNEL = 'edgehub_auth';
const EDGE_CHANNEL = 'edgehub_edge';

const leaseKeys = (prefix: string, { keyId, hubId }: StreamOwner) => [`${prefix}:inspect:streams:key:${keyId}`, `${prefix}:inspect:streams:hub:${hubId}`];

/**
 * KEYS: the key's leases, the hub's. ARGV: the member, the key's bound, the hub's bound, the lease ms. Drops the
 * leases that ended, then adds the member to both unless either is full: `ok`, `key` or `hub`.
 */
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 'key' end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 'hub' end
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[4]), ARGV[1])
  redis.call('PEXPIRE', KEYS[i], ARGV[4])
end
return 'ok'
`;

/** KEYS: the key's leases, the hub's. ARGV: the member, the lease ms. Renews the member's lease where it is held. */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], 'XX', now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
`;

const tooMany = (message: string) => refusal('EH_TOO_MANY_STREAMS', message);

class LiveStreams {
  private readonly open = new Map<string, OpenStream>();
  private readonly process = randomUUID();
  private seq = 0;
  private listeners: Listener[] | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private checking = false;
  private again = false;

  /** How many streams this process holds (for tests and metrics). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Admits a stream of `owner`, to be ended by calling `end` (which must call the returned release); 429 past a
   * bound, 503 when Redis, where the bounds over every process are kept, cannot be reached.
   */
  async admit(owner: StreamOwner, end: () => void): Promise<() => void> {
    const limits = config().inspect.live;
    if (this.open.size >= limits.perProcess)
      throw tooMany(`this web process holds ${limits.perProcess} live request streams (HUB_INSPECT_LIVE_PROCESS_MAX); try again later`);
    const member = `${this.process}:${++this.seq}`;
    // counted in this process before Redis is asked: concurrent admissions see it
    const stream: OpenStream = { ...owner, member, end, admitted: false };
    this.open.set(member, stream);
    this.listening();
    const prefix = config().queuePrefix;
    let answer: unknown;
    try {
      const redis = await readyRedis();
      answer = await redis.eval(ADMIT, 2, ...leaseKeys(prefix, owner), member, limits.perKey, limits.perHub, LEASE_MS);
    } catch {
      this.forget(member);
      throw unavailable('Redis, where live request streams are counted, is not reachable', 5);
    }
    if (answer !== 'ok') {
      this.forget(member);
      throw tooMany(
        answer === 'key'
          ? `this API key holds ${limits.perKey} live request streams (HUB_INSPECT_LIVE_MAX); close one first`
          : `the hub's API keys hold ${limits.perHub} live request streams (HUB_INSPECT_LIVE_HUB_MAX); close one first`,
      );
    }
    if (!this.open.has(member)) {
      // ended while Redis was asked (the process stops): the lease goes too
      void this.dropLease(stream);
      throw unavailable('the web process is stopping', 1);
    }
    stream.admitted = true;
    stream.lifetime = setTimeout(() => this.endStream(stream), limits.lifetimeMs);
    this.timers();
    return () => this.release(member);
  }

  /** The stream ended (the client left, or it was ended): its slot and lease are given back. */
  private release(member: string): void {
    const stream = this.open.get(member);
    if (!stream) return;
    this.forget(member);
    if (stream.admitted) void this.dropLease(stream);
  }

  private forget(member: string): void {
    const stream = this.open.get(member);
    if (!stream) return;
    this.open.delete(member);
    clearTimeout(stream.lifetime);
    if (this.open.size === 0) this.quiet();
  }

  private async dropLease(stream: OpenStream): Promise<void> {
    try {
      const redis = await readyRedis();
      const [keyLeases, hubLeases] = leaseKeys(config().queuePrefix, stream);
      await redis.pipeline().zrem(keyLeases, stream.member).zrem(hubLeases, stream.member).exec();
    } catch {
      // the lease ends by itself
    }
  }

  private endStream(stream: OpenStream): void {
    try {
      stream.end();
    } finally {
      this.release(stream.member);
    }
  }

  /** LISTENs on the change channels (from the first stream on, until the last ends). */
  private listening(): void {
    if (this.listeners) return;
    const onReset = () => this.check();
    this.listeners = [listen(AUTH_CHANNEL, () => this.check(), onReset), listen(EDGE_CHANNEL, (payload) => this.onEdgeChange(payload), onReset)];
  }

  private onEdgeChange(payload: string): void {
    let change: { table?: string; op?: string; hubId?: string; id?: string };
    try {
      change = JSON.parse(payload);
    } catch {
      return;
    }
    if (change.table !== 'shares' || change.op !== 'DELETE') return;
    for (const stream of [...this.open.values()]) if (stream.admitted && stream.zId === change.id && stream.hubId === change.hubId) this.endStream(stream);
  }

  /** Timers while streams are open: the leases' renewal, and the reading again while a LISTEN connection is down. */
  private timers(): void {
    this.renewTimer ??= setInterval(() => void this.renew(), RENEW_MS);
    this.pollTimer ??= setInterval(() => {
      if (this.listeners?.some((l) => !l.live)) this.check();
    }, POLL_MS);
    this.renewTimer.unref();
    this.pollTimer.unref();
  }

  /** No stream left: no timers, no LISTEN connections. */
  private quiet(): void {
    clearInterval(this.renewTimer);
    clearInterval(this.pollTimer);
    this.renewTimer = undefined;
    this.pollTimer = undefined;
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const l of listeners ?? []) void l.close();
  }

  private async renew(): Promise<void> {
    let redis: Redis;
    try {
      redis = await readyRedis();
    } catch {
      return;
    }
    const prefix = config().queuePrefix;
    const pipeline = redis.pipeline();
    for (const stream of this.open.values()) if (stream.admitted) pipeline.eval(RENEW, 2, ...leaseKeys(prefix, stream), stream.member, LEASE_MS);
    await pipeline.exec().catch(() => undefined);
  }

  /** Reads the open streams' keys, hubs and shares again (one reading at a time; a change meanwhile reads again). */
  private check(): void {
    if (this.checking) {
      this.again = true;
      return;
    }
    this.checking = true;
    void this.verify()
      .catch((err) => logger.warn({ err: (err as Error).message }, 'live request streams: keys, hubs and shares not read again; retrying'))
      .finally(() => {
        this.checking = false;
        if (this.again) {
          this.again = false;
          this.check();
        }
      });
  }

  /** Ends each stream whose key is revoked or gone, whose hub or share is gone. */
  private async verify(): Promise<void> {
    const streams = [...this.open.values()].filter((s) => s.admitted);
    if (!streams.length) return;
    const unique = (values: string[]) => [...new Set(values)];
    const keyIds = unique(streams.map((s) => s.keyId).filter((id) => id !== OPERATOR_KEY));
    const [keys, hubs, shares] = await Promise.all([
      keyIds.length ? preparedQuery<{ id: string }>('live-keys', 'SELECT id FROM api_keys WHERE id = ANY($1::text[]) AND revoked_at IS NULL', [keyIds]) : [],
      preparedQuery<{ id: string }>('live-hubs', 'SELECT id FROM hubs WHERE id = ANY($1::text[])', [unique(streams.map((s) => s.hubId))]),
      preparedQuery<{ hub_id: string; z_id: string }>('live-shares', 'SELECT hub_id, z_id FROM shares WHERE z_id = ANY($1::text[])', [
        unique(streams.map((s) => s.zId)),
      ]),
    ]);
    const keySet = new Set(keys.map((r) => r.id));
    const hubSet = new Set(hubs.map((r) => r.id));
    const shareSet = new Set(shares.map((r) => `${r.hub_id} ${r.z_id}`));
    for (const s of streams) {
      const allowed = (s.keyId === OPERATOR_KEY || keySet.has(s.keyId)) && hubSet.has(s.hubId) && shareSet.has(`${s.hubId} ${s.zId}`);
      if (!allowed && this.open.has(s.member)) this.endStream(s);
    }
  }

  /** Ends every stream (the process stops). */
  async close(): Promise<void> {
    for (const stream of [...this.open.values()]) this.endStream(stream);
    this.quiet();
  }
}

let streams: LiveStreams | undefined;

export function liveStreams(): LiveStreams {
  streams ??= new LiveStreams();
  return streams;
}

export async function closeLiveStreams(): Promise<void> {
  const s = streams;
  streams = undefined;
  await s?.close();
}
