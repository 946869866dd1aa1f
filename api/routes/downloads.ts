import { createReadStream, statSync } from 'node:fs';
import type { Context } from 'koa';
import { agentBinary, agentTarball } from '../../shared/downloads.js';
import { refusal } from '../../shared/errors.js';
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
    const binary = agentBinary();
    if ('missing' in binary) throw refusal('EH_NOT_FOUND', binary.missing);
    send(ctx, binary.file, 'application/octet-stream', 'edgehub-linux-x64');
  });
}
