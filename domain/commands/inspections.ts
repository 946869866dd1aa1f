/**
 * Request inspection and replay for the API: the recorded exchanges of a share of the hub (Redis, written by the
 * edges: shared/inspect/store.ts), the live feed of new ones, and replays, which an edge carries out
 * (edge/inspect/replay.ts). Every read names the hub: a share of another hub is not found.
 */
import { config } from '../../shared/config.js';
import { badRequest, DomainError, notFound, quotaExceeded, unavailable } from '../../shared/errors.js';
import { inspectFeed } from '../../shared/inspect/feed.js';
import { exchangesAfter, getExchange, listExchanges, liveSummaries } from '../../shared/inspect/read.js';
import { inspectKeys, parseExchangeId, type ExchangeDetail, type ExchangeSummary } from '../../shared/inspect/store.js';
import { readyRedis } from '../../shared/redis.js';
import { liveStreams, type StreamOwner } from './liveStreams.js';
import { findShare } from './shares.js';

const limits = () => config().inspect;

const redisOrUnavailable = () => readyRedis().catch(() => Promise.reject(unavailable('Redis, where inspected requests are kept, is not reachable')));

export async function listRequests(hubId: string, zId: string): Promise<ExchangeSummary[]> {
  await findShare(hubId, zId);
  return listExchanges(await redisOrUnavailable(), config().queuePrefix, hubId, zId, limits());
}

export async function getRequest(hubId: string, zId: string, id: string): Promise<ExchangeDetail> {
  await findShare(hubId, zId);
  const found = await getExchange(await redisOrUnavailable(), config().queuePrefix, hubId, zId, id, limits());
  if (!found) throw notFound('request', id);
  return found;
}

/**
 * Sends a recorded request again through an edge (the same path as live traffic) and answers with the new exchange.
 * 404 for a deleted share or an exchange no longer kept; 503 when no edge answered in time.
 */
export async function replayRequest(hubId: string, zId: string, id: string): Promise<ExchangeSummary> {
  await getRequest(hubId, zId, id);
  const waitMs = config().edge.upstreamTimeoutMs + 10_000;
  const reply = await inspectFeed().replay({ hubId, zId, exchangeId: id }, waitMs);
  if (!reply) throw unavailable(`no edge carried out the replay within ${Math.round(waitMs / 1000)} s (is an edge running?)`);
  if (!reply.ok) {
    if (reply.status === 404) throw new DomainError('EH_NOT_FOUND', reply.message);
    if (reply.status === 400) throw badRequest(reply.message);
    if (reply.status === 429) throw quotaExceeded(reply.message);
    throw unavailable(reply.message);
  }
  return reply.exchange;
}

/**
 * Admits a live stream of the share for `owner` (its bounds, its lifetime, its end when the key, hub or share goes:
 * domain/commands/liveStreams.ts) and calls `send` with each new exchange until the returned function is called;
 * `end` is called when the stream must end, and must call the returned function.
 */
export async function followRequests(owner: StreamOwner, send: (summary: ExchangeSummary) => void, end: () => void): Promise<() => void> {
  await findShare(owner.hubId, owner.zId);
  const release = await liveStreams().admit(owner, end);
  try {
    const unlisten = await inspectFeed().listen(inspectKeys(config().queuePrefix, owner.hubId, owner.zId).live, (message) => {
      for (const summary of liveSummaries(message)) send(summary);
    });
    return () => {
      unlisten();
      release();
    };
  } catch (err) {
    release();
    throw err;
  }
}

/** Summaries recorded after `lastId` (a reconnecting stream's Last-Event-ID), oldest first. */
export async function requestsAfter(hubId: string, zId: string, lastId: string): Promise<ExchangeSummary[]> {
  if (!parseExchangeId(lastId)) return [];
  const redis = await redisOrUnavailable();
  return exchangesAfter(redis, config().queuePrefix, hubId, zId, lastId, limits().max);
}
