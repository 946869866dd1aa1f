/**
 * The web process of bench/ocsp.ts: the API as api/server.ts starts it, plus one route of the bench's own answering a
 * static 200 (`POST /pki/bench-static/ocsp?bytes=N`: the request body read, N bytes of application/ocsp-response
 * sent). The static route sits in the same Koa app behind the same middleware (request edge, throttles, body
 * handling), just before the router: the baseline is the same process answering the cheapest possible OCSP-shaped
 * exchange, so the ratio is the cost of the responder's own work.
 */
import getRawBody from 'raw-body';
import type { Middleware } from 'koa';
import { createApp } from '../api/app.js';
import { startAuthCache } from '../api/middleware/authCache.js';
import { config } from '../shared/config.js';
import { startOcspCache } from '../domain/commands/ocspResponder.js';
import { initDb } from '../shared/db.js';
import { presetSetting } from '../shared/settings.js';

presetSetting('HUB_PROCESS', 'web');
await initDb();
await startAuthCache();
startOcspCache();
const bodies = new Map<number, Buffer>();
const staticAnswer: Middleware = async (ctx, next) => {
  if (ctx.path !== '/pki/bench-static/ocsp') return next();
  await getRawBody(ctx.req, { limit: 16 * 1024 });
  const bytes = Number(ctx.query.bytes ?? 0);
  let body = bodies.get(bytes);
  if (!body) bodies.set(bytes, (body = Buffer.alloc(bytes, 0x30)));
  ctx.status = 200;
  ctx.type = 'application/ocsp-response';
  ctx.set('Cache-Control', 'no-cache');
  ctx.body = body;
};
const app = createApp();
// just before the router (the last middleware)
app.middleware.splice(app.middleware.length - 1, 0, staticAnswer);
app.listen(config().port);
