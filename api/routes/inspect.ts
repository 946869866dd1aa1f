/**
 * Request inspection and replay: a share's recorded exchanges, one
 * with its headers and bodies, a replay through an edge, and a Server-Sent Events stream of new ones.
 */
import { PassThrough } from 'node:stream';
import { followRequests, getRequest, listRequests, replayRequest, requestsAfter } from '../../shared/commands/inspections.js';
import { inspectFeed } from '../../shared/inspect/feed.js';
import type { ExchangeSummary } from '../../shared/inspect/store.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';

const HEARTBEAT_MS = 15_000;

const event = (summary: ExchangeSummary) => `id: ${summary.id}\nevent: exchange\ndata: ${JSON.stringify(summary)}\n\n`;

export default function routes({ hub }: Routes) {
  hub.get('/shares/:shareId/requests', async (ctx) => {
    ctx.body = await listRequests(currentHub(ctx).id, ctx.params.shareId);
  });
  // before /requests/:id: `live` is not an exchange id
  hub.get('/shares/:shareId/requests/live', async (ctx) => {
    const hubId = currentHub(ctx).id;
    const zId = ctx.params.shareId;
    const stream = new PassThrough();
    const unfollow = await followRequests(hubId, zId, (summary) => stream.write(event(summary)));
    let ended = false;
    const heartbeat = setInterval(() => stream.write(': keep-alive\n\n'), HEARTBEAT_MS);
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      unfollow();
      untrack();
      stream.end();
    };
    const untrack = inspectFeed().track(end);
    ctx.req.once('close', end);
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.type = 'text/event-stream';
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Accel-Buffering', 'no');
    stream.write(': connected\nretry: 2000\n\n');
    // a reconnecting client gets what it missed
    const last = ctx.get('last-event-id');
    if (last) for (const summary of await requestsAfter(hubId, zId, last)) stream.write(event(summary));
    ctx.body = stream;
  });
  hub.get('/shares/:shareId/requests/:id', async (ctx) => {
    ctx.body = await getRequest(currentHub(ctx).id, ctx.params.shareId, ctx.params.id);
  });
  hub.post('/shares/:shareId/requests/:id/replay', async (ctx) => {
    ctx.status = 201;
    ctx.body = await replayRequest(currentHub(ctx).id, ctx.params.shareId, ctx.params.id);
  });
}
