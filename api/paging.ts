import type { Context } from 'koa';
import type { FindOptions, Model, ModelStatic, Order, WhereOptions } from 'sequelize';
import { config } from '../shared/config.js';
import { badRequest } from '../shared/errors.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 1000;

export interface PageRequest {
  page: number;
  size: number;
  order: [string, 'ASC' | 'DESC'][];
}

export interface Page<T> {
  content: T[];
  pageable: { pageNumber: number; pageSize: number };
  totalElements: number;
  totalPages: number;
}

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

export function envelope<T>(content: T[], totalElements: number, req: PageRequest): Page<T> {
  return {
    content,
    pageable: { pageNumber: req.page, pageSize: req.size },
    totalElements,
    totalPages: Math.ceil(totalElements / req.size),
  };
}

/**
 * One page of `model` rows matching `where`, presented. A primary-key tie-breaker keeps pages stable.
 *
 * Offsets are bounded: PostgreSQL reads and throws away every row before an OFFSET, so a page may start at most
 * HUB_MAX_LIST_OFFSET rows deep (400 beyond, naming the limit), and a page past the end answers from the count
 * alone, without the row query: it costs no more than the first page.
 */
export async function findPage<M extends Model, T>(
  model: ModelStatic<M>,
  where: WhereOptions,
  req: PageRequest,
  present: (row: M) => T,
  extra: Omit<FindOptions, 'where' | 'order' | 'limit' | 'offset'> = {},
): Promise<Page<T>> {
  const offset = req.page * req.size;
  const maxOffset = config().quotas.maxListOffset;
  if (offset > maxOffset) {
    throw badRequest(
      `page ${req.page} of size ${req.size} starts ${offset} rows deep; lists are read at most ${maxOffset} rows deep: narrow the list with filters or reverse the sort`,
    );
  }
  const count = await model.count({ where });
  if (offset >= count) return envelope([], count, req);
  const order = [...req.order, [model.primaryKeyAttribute, 'ASC']] as Order;
  const rows = await model.findAll({ ...extra, where, order, limit: req.size, offset });
  return envelope(rows.map(present), count, req);
}
