import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import Koa from 'koa';
import { BOARD_QUEUES, queue } from '../shared/queues.js';
import { jsonBody } from './middleware/body.js';
import { guardQueueUi, QUEUES_PREFIX } from './middleware/queueUi.js';
import { requestEdge } from './middleware/requestEdge.js';
import { authFailureThrottle, unauthenticatedLimit } from './middleware/throttle.js';
import { createRoutes } from './router.js';
import { routeModules } from './routes/index.js';
import { config } from '../shared/config.js';

function queueBoard(): Koa.Middleware {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(QUEUES_PREFIX);
  // read-only: the UI shows queues and jobs but cannot add, retry, promote, clean or remove one (docs/security.md)
  createBullBoard({ queues: BOARD_QUEUES.map((n) => new BullMQAdapter(queue(n), { readOnlyMode: true })), serverAdapter });
  return guardQueueUi(serverAdapter.registerPlugin() as unknown as Koa.Middleware);
}

export function createApp(): Koa {
  const app = new Koa({ proxy: config().trustProxy });
  app.silent = true; // errors middleware logs; Koa's default stderr dump would print stacks
  const { routes, middleware: routeMiddleware } = createRoutes();
  for (const register of routeModules) register(routes);

  const security = config().security;
  // request id, security headers, error mapping, access line and HTTP metrics in one pass (requestEdge.ts)
  app.use(requestEdge);
  app.use(authFailureThrottle(security));
  app.use(unauthenticatedLimit(security));
  app.use(queueBoard());
  app.use(jsonBody);
  app.use(routeMiddleware());
  return app;
}
