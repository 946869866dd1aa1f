import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { config } from '../shared/config.js';
import { closeDb, initDb } from '../shared/db.js';
import { logger } from '../shared/logger.js';
import { closeIssuanceEvents } from '../domain/commands/pkiJobs.js';
import { closeLiveStreams } from '../domain/commands/liveStreams.js';
import { startOcspCache, stopOcspCache } from '../domain/commands/ocspResponder.js';
import { closeInspectFeed } from '../shared/inspect/feed.js';
import { closeQueues } from '../domain/jobs/queues.js';
import { closeRedis } from '../shared/redis.js';
import { refuseUnreachableSentinels } from '../shared/redisSentinel.js';
import { isMain, onShutdown } from '../shared/shutdown.js';
import { startMetricsServer } from '../shared/telemetry/index.js';
import { refuseWrongSecretKey } from '../shared/secretKeyProbe.js';
import { createApp } from './app.js';
import { startAuthCache, stopAuthCache } from './middleware/authCache.js';
import { presetSetting } from '../shared/settings.js';

/** Starts the API on `port` (0 = any free port) and returns the listening server. */
export async function startServer(port = config().port): Promise<Server> {
  await initDb();
  // without its LISTEN connection the auth cache stays off (every request reads the database) until it connects
  await startAuthCache().catch((err) => logger.warn({ err: (err as Error).message }, 'auth cache not live yet'));
  // the OCSP responder's answers are kept only while it hears of revocations (the same LISTEN scheme)
  startOcspCache();
  const app = createApp();
  const server = app.listen(port);
  server.keepAliveTimeout = 65_000;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  opened.set(server, sockets);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return server;
}

/** Each server's open connections, for a stop that must not wait on those that never sent a byte. */
const opened = new WeakMap<Server, Set<Socket>>();

/**
 * Stops accepting, lets the requests in flight finish, then closes what serving requests opened: the auth cache's
 * and the OCSP responder's LISTEN connections and the pki QueueEvents reader that the first certificate issuance or key rotation opened
 * (domain/commands/pkiJobs.ts; its blocking Redis connection would otherwise keep the process alive).
 */
export async function stopServer(server: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    // open event streams (the request inspector's live view) end: their connections are then idle
    void Promise.all([closeInspectFeed(), closeLiveStreams()]).then(() => server.closeIdleConnections());
    server.closeIdleConnections();
    // a connection that never sent a byte (a browser's preconnect, a client that aborted while connecting) is not
    // idle to node:http: it would hold the stop until the headers timeout (a minute); it has nothing in flight
    for (const socket of opened.get(server) ?? []) if (socket.bytesRead === 0) socket.destroy();
  });
  await stopAuthCache();
  await stopOcspCache();
  await closeIssuanceEvents();
}

if (isMain(import.meta.url)) {
  presetSetting('HUB_PROCESS', 'web');
  await initDb();
  await refuseWrongSecretKey();
  await refuseUnreachableSentinels();
  const server = await startServer();
  await startMetricsServer();
  logger.info({ port: config().port }, 'api listening');
  onShutdown(async () => {
    await stopServer(server);
    await closeQueues();
    await closeRedis();
    await closeDb();
  });
}
