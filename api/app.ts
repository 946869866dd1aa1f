import Koa from 'koa';
import { unavailable } from '../shared/errors.js';
import { BOARD_QUEUES, queue, queuesReady } from '../domain/jobs/queues.js';
import { jsonBody } from './middleware/body.js';
import { refuseCrossSite } from './middleware/crossSite.js';
import { guardQueueUi, QUEUES_PREFIX } from './middleware/queueUi.js';
import { requestEdge } from './middleware/requestEdge.js';
import { authFailureThrottle, unauthenticatedLimit } from './middleware/throttle.js';
import { createRoutes } from './router.js';
import { routeModules } from './routes/index.js';
import { config } from '../shared/config.js';

/**
 * bull-board's Koa middleware over every queue, read-only: the UI shows queues and jobs but cannot add, retry,
 * promote, clean or remove one (docs/security.md).
 */
async function loadBoard(): Promise<Koa.Middleware> {
  const [{ createBullBoard }, { BullMQAdapter }, { KoaAdapter }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/koa'),
  ]);
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(QUEUES_PREFIX);
  createBullBoard({ queues: BOARD_QUEUES.map((n) => new BullMQAdapter(queue(n), { readOnlyMode: true })), serverAdapter });
  return serverAdapter.registerPlugin() as unknown as Koa.Middleware;
}

/**
 * The queue UI under its guard. bull-board (its Koa server with views and static files) is loaded by the first
 * request the guard lets through, not at every start of the API: it is a third of a second of a web process's start
 * for a page operators open now and then.
 */
function queueBoard(): Koa.Middleware {
  let board: Promise<Koa.Middleware> | undefined;
  const lazyBoard: Koa.Middleware = async (ctx, next) => {
    // the board's API reads the queues from Redis: while Redis is away it answers 503 at once, where bull-board's
    // calls would wait for it (queues never connected) or fail inside the library (a connection lost)
    if (ctx.path.startsWith(`${QUEUES_PREFIX}/api/`) && !(await queuesReady(BOARD_QUEUES))) {
      throw unavailable('the job queues (Redis) cannot be reached; the queue UI shows them once Redis is back', 5);
    }
    board ??= loadBoard().catch((err) => {
      board = undefined;
      throw err;
    });
    return (await board)(ctx, next);
  };
  return guardQueueUi(lazyBoard);
}

export function createApp(): Koa {
  const app = new Koa({ proxy: config().trustProxy });
  app.silent = true; // errors middleware logs; Koa's default stderr dump would print stacks
  const { routes, middleware: routeMiddleware } = createRoutes();
  for (const register of routeModules) register(routes);
  // The queues the API adds jobs to, made now with their producer connections: a connection that was ready once
  // refuses commands at once while Redis is away (the execution stays QUEUED and the sweeper re-adds its job), where
  // a queue first made during an outage would hold its calls until Redis is back.
  for (const name of BOARD_QUEUES) queue(name);

  const security = config().security;
  // request id, security headers, error mapping, access line and HTTP metrics in one pass (requestEdge.ts)
  app.use(requestEdge);
  app.use(authFailureThrottle(security));
  app.use(unauthenticatedLimit(security));
  // no change of state from another site, on every route, the queue UI's included (crossSite.ts)
  app.use(refuseCrossSite);
  app.use(queueBoard());
  app.use(jsonBody);
  app.use(routeMiddleware());
  return app;
}
