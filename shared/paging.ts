import type { FindOptions, Model, ModelStatic, Order, WhereOptions } from 'sequelize';
import { config } from './config.js';
import { refusal } from './errors.js';

/** A page asked for: zero-based page number, size, and the order (API field names, mapped to attributes by Sequelize). */
export interface PageRequest {
  page: number;
  size: number;
  order: [string, 'ASC' | 'DESC'][];
}

/** The paged list envelope of the API. */
export interface Page<T> {
  content: T[];
  pageable: { pageNumber: number; pageSize: number };
  totalElements: number;
  totalPages: number;
}

function envelope<T>(content: T[], totalElements: number, req: PageRequest): Page<T> {
  return {
    content,
    pageable: { pageNumber: req.page, pageSize: req.size },
    totalElements,
    totalPages: Math.ceil(totalElements / req.size),
  };
}

/** The same page with each item turned into another (a row into its API shape). */
export const mapPage = <T, U>(page: Page<T>, fn: (item: T) => U): Page<U> => ({ ...page, content: page.content.map(fn) });

/**
 * One page of `model` rows matching `where`. A primary-key tie-breaker keeps pages stable. Commands list their
 * resources with it; routes present the rows.
 *
 * Offsets are bounded: PostgreSQL reads and throws away every row before an OFFSET, so a page may start at most
 * HUB_MAX_LIST_OFFSET rows deep (400 beyond, naming the limit), and a page past the end answers from the count
 * alone, without the row query: it costs no more than the first page.
 */
export async function findPage<M extends Model>(
  model: ModelStatic<M>,
  where: WhereOptions,
  req: PageRequest,
  extra: Omit<FindOptions, 'where' | 'order' | 'limit' | 'offset'> = {},
): Promise<Page<M>> {
  const offset = req.page * req.size;
  const maxOffset = config().quotas.maxListOffset;
  if (offset > maxOffset) {
    throw refusal(
      'EH_LIST_TOO_DEEP',
      `page ${req.page} of size ${req.size} starts ${offset} rows deep; lists are read at most ${maxOffset} rows deep: narrow the list with filters or reverse the sort`,
    );
  }
  const count = await model.count({ where });
  if (offset >= count) return envelope([], count, req);
  const order = [...req.order, [model.primaryKeyAttribute, 'ASC']] as Order;
  const rows = await model.findAll({ ...extra, where, order, limit: req.size, offset });
  return envelope(rows, count, req);
}
