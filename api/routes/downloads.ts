import { createReadStream, statSync } from 'node:fs';
import type { Context } from 'koa';
import { agentBinary, agentTarball } from '../../shared/commands/downloads.js';
import { notFound } from '../../shared/errors.js';
import type { Routes } from '../router.js';

function send(ctx: Context, file: string, type: string, name: string): void {
  ctx.set('Content-Type', type);
  ctx.set('Content-Length', String(statSync(file).size));
  ctx.set('Content-Disposition', `attachment; filename="${name}"`);
  ctx.set('Cache-Control', 'no-cache');
  ctx.body = createReadStream(file);
}

/** The agent for a user's machine, without authentication: the npm package, and the single executable when built. */
export default function routes({ open }: Routes) {
  open.get('/downloads/edgehub-agent.tgz', async (ctx) => {
    send(ctx, await agentTarball(), 'application/gzip', 'edgehub-agent.tgz');
  });
  open.get('/downloads/edgehub-linux-x64', async (ctx) => {
    const file = agentBinary();
    if (!file) throw notFound('the single executable (it is built on the service by npm run build:agent-binary)');
    send(ctx, file, 'application/octet-stream', 'edgehub-linux-x64');
  });
}
