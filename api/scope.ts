import type { Context } from 'koa';
import type { CachedHub } from './middleware/authCache.js';

/** The hub the request was admitted to (set by requireHub / requireAccount): id, name and features, not a model. */
export const currentHub = (ctx: Context): CachedHub => ctx.state.hub as CachedHub;
