/**
 * Request inspection and replay: a share's recorded exchanges, one
 * with its headers and bodies, a replay through an edge, and a Server-Sent Events stream of new ones.
 */
import { PassThrough } from 'node:stream';
import { followRequests, getRequest, listRequests, replayRequest, requestsAfter } from '../../domain/commands/inspections.js';
import { OPERATOR_KEY } from '../../domain/commands/liveStreams.js';
import { inspectFeed } from '../../shared/inspect/feed.js';
import type { ExchangeSummary } from '../../shared/inspect/store.js';
import type { Routes } from '../router.js';
import type { Principal } from '../middleware/auth.js';
import { currentHub } from '../scope.js';

const HEARTBEAT_MS = 15_000;
/** Bytes a stream may have waiting for a client that does not read; past it the stream ends. */
const MAX_BUFFERED = 256 * 1024;

const event = (summary: ExchangeSummary) => `id: ${summary.id}\nevent: exchange\ndata: ${JSON.stringify(summary)}\n\n`;

export default function routes({ hub }: Routes) {
  hub.get('/shares/:shareId/requests', async (ctx) => {
    ctx.body = await listRequests(currentHub(ctx).id, ctx.params.shareId);
  });
  // before /requests/:id: `live` is not an exchange id
  hub.get('/shares/:shareId/requests/live', async (ctx) => {
    const hubId = currentHub(ctx).id;
    const zId = ctx.params.shareId;
    const principal = ctx.state.principal as Principal;
    const keyId = principal.kind === 'apikey' ? principal.keyId : OPERATOR_KEY;
    const stream = new PassThrough();
    let ended = false;
    let heartbeat: NodeJS.Timeout | undefined;
    let unfollow: (() => void) | undefined;
    let untrack: (() => void) | undefined;
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      unfollow?.();
      untrack?.();
      stream.end();
    };
    // a client that does not read is let go rather than buffered for
    const send = (text: string) => {
      if (ended) return;
      if (stream.writableLength > MAX_BUFFERED) return end();
      stream.write(text);
    };
    unfollow = await followRequests({ keyId, hubId, zId }, (summary) => send(event(summary)), end);
    if (ended) unfollow();
    heartbeat = setInterval(() => send(': keep-alive\n\n'), HEARTBEAT_MS);
    untrack = inspectFeed().track(end);
    ctx.req.once('close', end);
    ctx.res.once('close', end);
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.type = 'text/event-stream';
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Accel-Buffering', 'no');
    send(': connected\nretry: 2000\n\n');
    ctx.body = stream;
    // a reconnecting client gets what it missed
    const last = ctx.get('last-event-id');
    if (last) for (const summary of await requestsAfter(hubId, zId, last)) send(event(summary));
  });
  hub.get('/shares/:shareId/requests/:id', async (ctx) => {
    ctx.body = await getRequest(currentHub(ctx).id, ctx.params.shareId, ctx.params.id);
  });
  hub.post('/shares/:shareId/requests/:id/replay', async (ctx) => {
    ctx.status = 201;
    ctx.body = await replayRequest(currentHub(ctx).id, ctx.params.shareId, ctx.params.id);
  });
}
