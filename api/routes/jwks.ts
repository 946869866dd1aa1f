import { publishedKeys } from '../../domain/commands/signingKeys.js';
import type { Routes } from '../router.js';

/** Verifiers re-read the set periodically and on an unknown kid, so a short cache lifetime suffices. */
const MAX_AGE_SECONDS = 300;

export default function routes({ open }: Routes) {
  open.get('/hub/v2/public/.well-known/jwks.json', async (ctx) => {
    ctx.set('Cache-Control', `public, max-age=${MAX_AGE_SECONDS}`);
    ctx.body = { keys: await publishedKeys() };
  });
}
