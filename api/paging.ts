import type { Context } from 'koa';
import { badRequest } from '../shared/errors.js';
import type { PageRequest } from '../shared/paging.js';

export { mapPage } from '../shared/paging.js';

const DEFAULT_PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 1000;

function intParam(ctx: Context, name: string, fallback: number, min: number, max: number): number {
  const raw = ctx.query[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value)) throw badRequest(`value for query parameter '${name}' must be of type integer`);
  const n = Number(value);
  if (n < min || n > max) throw badRequest(`value for query parameter '${name}' must be between ${min} and ${max}`);
  return n;
}

/**
 * Reads `page` (zero-based), `size` (default 20, max 1000) and `sort` (`field` or `field,asc|desc`, repeatable).
 * `sortable` lists the API field names a caller may sort by; anything else is a 400.
 */
export function pageRequest(ctx: Context, sortable: readonly string[], defaultSort: [string, 'ASC' | 'DESC'] = ['createdAt', 'DESC']): PageRequest {
  const page = intParam(ctx, 'page', 0, 0, 1_000_000);
  const size = intParam(ctx, 'size', DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE);
  const raw = ctx.query.sort;
  const sorts = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((s) => s !== '');
  const order: [string, 'ASC' | 'DESC'][] = sorts.map((s) => {
    const [field, direction = 'asc', ...rest] = s.split(',').map((p) => p.trim());
    if (rest.length || !field) throw badRequest(`value for query parameter 'sort' must be 'field' or 'field,asc|desc' (got '${s}')`);
    if (!sortable.includes(field)) throw badRequest(`cannot sort by '${field}'; sortable fields: ${sortable.join(', ')}`);
    const dir = direction.toLowerCase();
    if (dir !== 'asc' && dir !== 'desc') throw badRequest(`sort direction must be 'asc' or 'desc' (got '${direction}')`);
    return [field, dir === 'asc' ? 'ASC' : 'DESC'];
  });
  return { page, size, order: order.length ? order : [defaultSort] };
}
