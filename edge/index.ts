/** The `edge` process (Procfile): the data plane that serves shares (CONTRACT.md "The edge"). */
import { config } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import { logger } from '../shared/logger.js';
import { isMain, onShutdown } from '../shared/shutdown.js';
import { startEdge } from './server.js';

if (isMain(import.meta.url)) {
  process.env.HUB_PROCESS ??= 'edge';
  await initDb(); // the usage store writes through the shared pool
  const edge = await startEdge();
  logger.info({ httpPort: edge.httpPort, httpsPort: edge.httpsPort, routes: edge.routes.size, template: config().edge.publicFrontendTemplate }, 'edge listening');
  onShutdown(async () => {
    // stop accepting, let requests in flight finish, then write the last counters
    await edge.stop();
    await closeDb();
  });
}
