/**
 * The web process's side of inspection on Redis pub/sub: one subscriber connection per process carries the live
 * summaries of the shares someone watches (subscribed while at least one stream is open) and the answers of the
 * edges to this process's replay requests (its own channel).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { config } from '../config.js';
import { unavailable } from '../errors.js';
import { createRedis, readyRedis } from '../redis.js';
import { settleWithin } from '../timeouts.js';
import { enqueueReplay, replayKeys, withdrawReplay } from './replayQueue.js';
import type { ReplayReply, ReplayRequest } from './store.js';

type Listener = (message: string) => void;

/** How long a request waits for the subscriber connection before it is refused 503. */
const SUBSCRIBE_WAIT_MS = 2000;

/** `work`, or 503 `unavailable` once SUBSCRIBE_WAIT_MS have passed (the work itself goes on). */
const bounded = <T>(work: Promise<T>): Promise<T> =>
  settleWithin(work, SUBSCRIBE_WAIT_MS, () => unavailable('Redis, where inspected requests are kept, is not reachable', 5));

class InspectFeed {
  private sub: Redis | undefined;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly waiting = new Map<string, (reply: ReplayReply) => void>();
  private readonly streams = new Set<() => void>();
  readonly replyChannel = `${replayKeys(config().queuePrefix).replies}${randomUUID()}`;
  private ready: Promise<unknown> | undefined;

  private subscriber(): Promise<unknown> {
    if (this.ready) return this.ready;
    const sub = (this.sub = createRedis('worker'));
    sub.on('message', (channel: string, message: string) => {
      if (channel === this.replyChannel) {
        let reply: ReplayReply;
        try {
          reply = JSON.parse(message) as ReplayReply;
        } catch {
          return;
        }
        this.waiting.get(reply.replayId)?.(reply);
        return;
      }
      for (const fn of this.listeners.get(channel) ?? []) fn(message);
    });
    this.ready = sub.subscribe(this.replyChannel);
    return this.ready;
  }

  /**
   * Calls `fn` with each message of `channel` until the returned function is called. The subscriber connection queues
   * its commands while Redis is away (so that open streams are subscribed again when it is back): a new listener
   * does not wait with them, it is refused 503 after SUBSCRIBE_WAIT_MS.
   */
  async listen(channel: string, fn: Listener): Promise<() => void> {
    await bounded(this.subscriber());
    let set = this.listeners.get(channel);
    if (!set) {
      const fresh = new Set<Listener>();
      this.listeners.set(channel, fresh);
      try {
        await bounded(this.sub!.subscribe(channel));
      } catch (err) {
        // nobody else joined meanwhile: no channel is left subscribed for no one once Redis is back
        if (!fresh.size && this.listeners.get(channel) === fresh) {
          this.listeners.delete(channel);
          void this.sub?.unsubscribe(channel).catch(() => undefined);
        }
        throw err;
      }
      set = fresh;
    }
    set.add(fn);
    return () => {
      set.delete(fn);
      if (!set.size && this.listeners.get(channel) === set) {
        this.listeners.delete(channel);
        void this.sub?.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  /**
   * Hands a replay to whichever edge takes it first (in its hub's queue: shared/inspect/replayQueue.ts); its answer, or
   * undefined when none came within `timeoutMs`.
   */
  async replay(request: Omit<ReplayRequest, 'replayId' | 'replyTo' | 'deadline'>, timeoutMs: number): Promise<ReplayReply | undefined> {
    await bounded(this.subscriber());
    const replayId = randomUUID();
    const full: ReplayRequest = { ...request, replayId, replyTo: this.replyChannel, deadline: Date.now() + timeoutMs };
    const text = JSON.stringify(full);
    const answer = new Promise<ReplayReply | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(replayId);
        resolve(undefined);
      }, timeoutMs);
      this.waiting.set(replayId, (reply) => {
        clearTimeout(timer);
        this.waiting.delete(replayId);
        resolve(reply);
      });
    });
    const redis = await readyRedis();
    const prefix = config().queuePrefix;
    await enqueueReplay(redis, prefix, full, text);
    const reply = await answer;
    // nobody took it in time: it must not run later
    if (!reply) await withdrawReplay(redis, prefix, full, text).catch(() => undefined);
    return reply;
  }

  /** An open event stream, ended (by calling `end`) when the process stops. */
  track(end: () => void): () => void {
    this.streams.add(end);
    return () => this.streams.delete(end);
  }

  async close(): Promise<void> {
    for (const end of [...this.streams]) end();
    this.streams.clear();
    const sub = this.sub;
    this.sub = undefined;
    this.ready = undefined;
    this.listeners.clear();
    if (sub) await sub.quit().catch(() => sub.disconnect());
  }
}

let feed: InspectFeed | undefined;

export function inspectFeed(): InspectFeed {
  feed ??= new InspectFeed();
  return feed;
}

export async function closeInspectFeed(): Promise<void> {
  const f = feed;
  feed = undefined;
  await f?.close();
}
