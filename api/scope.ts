import type { Context } from 'koa';
import type { FindOptions, Model, ModelStatic, WhereOptions } from 'sequelize';
import { notFound } from '../shared/errors.js';
import type { CachedHub } from './middleware/authCache.js';

/** The hub the request was admitted to (set by requireHub / requireAccount): id, name and features, not a model. */
export const currentHub = (ctx: Context): CachedHub => ctx.state.hub as CachedHub;

/** `where` narrowed to the current hub: every hub-owned query goes through this or findInHub. */
export function inHub(ctx: Context, where: Record<string, unknown> = {}): WhereOptions {
  return { ...where, hubId: currentHub(ctx).id };
}

/** The row of `model` with primary key `id` in the current hub, or 404. */
export async function findInHub<M extends Model>(
  ctx: Context,
  model: ModelStatic<M>,
  id: string,
  what: string,
  options: Omit<FindOptions, 'where'> = {},
): Promise<M> {
  const row = await model.findOne({ ...options, where: inHub(ctx, { [model.primaryKeyAttribute]: id }) });
  if (!row) throw notFound(what, id);
  return row;
}
