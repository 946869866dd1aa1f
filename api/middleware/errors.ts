import type { Context } from 'koa';
import {
  ConnectionAcquireTimeoutError,
  ConnectionError,
  ForeignKeyConstraintError,
  UniqueConstraintError,
  ValidationError as SequelizeValidationError,
} from 'sequelize';
import { ZodError } from 'zod';
import { DomainError, ERROR_CODE_HEADER } from '../../shared/errors.js';
import { logThrottle } from '../../shared/logThrottle.js';
import { HttpError } from '../httpError.js';
import { formatZodError } from '../validate.js';
import { requestLog } from './requestContext.js';

/** PostgreSQL's codes for a server that is not taking this connection: shutdown, start-up, too many connections (and class 08). */
const UNREACHABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** The socket's codes for a server that cannot be reached, counted only inside a Sequelize error (a fetch fails alike). */
const UNREACHABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE']);

type Wrapped = { code?: unknown; message?: unknown; original?: unknown; parent?: unknown };

/**
 * Whether an error says the database could not be reached, rather than that a statement failed: Sequelize's
 * connection errors, and what pg says itself (a statement of a hot path runs on a pooled pg client directly) of a
 * lost connection, a server shutting down or starting, a database closed to connections (`ALLOW_CONNECTIONS false`,
 * how maintenance keeps clients out), too many connections. Sequelize keeps pg's error in `original`/`parent`; other
 * libraries' errors (an identity provider's discovery, a probe) are never read as the database's.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  if (err instanceof ConnectionError) return true;
  let e = err as Wrapped | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 3; depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    const message = typeof e.message === 'string' ? e.message : '';
    if (/^08[0-9A-Z]{3}$/.test(code) || UNREACHABLE_SQLSTATES.has(code)) return true;
    if (depth > 0 && UNREACHABLE_SOCKET_CODES.has(code)) return true;
    if (code === '55000' && /not currently accepting connections/.test(message)) return true;
    if (/^Connection terminated( unexpectedly| due to connection timeout)?$/.test(message)) return true;
    e = (e.original ?? e.parent) as Wrapped | undefined;
  }
  return false;
}

/** The SQLSTATE of a PostgreSQL error, as pg reports it or as Sequelize wraps it. */
function sqlStateOf(err: unknown): string | undefined {
  const e = err as Wrapped | undefined;
  const code = (e?.original as Wrapped | undefined)?.code ?? (e?.parent as Wrapped | undefined)?.code ?? e?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * A statement PostgreSQL gave up on for a reason of the moment, not of the request: the server takes no writes (a
 * standby reached during a failover), it outlived
 * HUB_DB_STATEMENT_TIMEOUT_MS (a slow plan, a lock held elsewhere), it collided with another transaction (deadlock,
 * serialization failure), or the server is out of a resource (disk, memory, a configured limit; class 53). Each is
 * a 503 with Retry-After, logged (an operator must see a disk that is full), never a 500.
 */
function transientDatabaseFault(err: unknown): { message: string; retryAfter: number; level: 'warn' | 'error' } | undefined {
  const state = sqlStateOf(err);
  // a standby (or a server set read-only) behind the database's address: a failover is under way
  if (state === '25006') return { message: 'the database takes no writes now (a failover is under way); retry after 2 s', retryAfter: 2, level: 'warn' };
  if (state === '57014') return { message: 'the database did not finish in time (statement timeout); retry later', retryAfter: 1, level: 'warn' };
  if (state === '40P01' || state === '40001') return { message: 'the request collided with a concurrent change; retry it', retryAfter: 1, level: 'warn' };
  if (state?.startsWith('53') && state !== '53300')
    return { message: 'the database is out of resources (disk, memory or a limit); retry later', retryAfter: 5, level: 'error' };
  return undefined;
}

/** The HTTP answer of an error: the catalogue's for a domain error, the library's refusals as the API's own. */
function answerOf(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof DomainError) {
    return new HttpError(err.code, err.message, err.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(err.retryAfterSeconds) });
  }
  if (err instanceof ZodError) return new HttpError('EH_INVALID_REQUEST', formatZodError(err));
  if (err instanceof UniqueConstraintError) {
    const fields = Object.keys(err.fields ?? {}).filter((f) => f !== 'hub_id');
    return new HttpError('EH_CONFLICT', fields.length ? `a resource with this ${fields.join(', ')} already exists` : 'the resource already exists');
  }
  if (err instanceof ForeignKeyConstraintError) return new HttpError('EH_INVALID_REQUEST', 'a referenced resource does not exist');
  if (err instanceof SequelizeValidationError) return new HttpError('EH_INVALID_REQUEST', err.errors.map((e) => e.message).join('; '));
  // every connection of the process's pool stayed busy for HUB_DB_ACQUIRE_TIMEOUT_MS: nothing was done, try again
  if (err instanceof ConnectionAcquireTimeoutError) {
    return new HttpError('EH_UNAVAILABLE', 'the service is busy: no database connection was free in time; retry after 1 s', { 'Retry-After': '1' });
  }
  // a value PostgreSQL cannot store as text (U+0000 above all) reached a statement: the request's fault, whichever
  // field or path parameter carried it
  if (sqlStateOf(err) === '22021' || sqlStateOf(err) === '22P05') {
    return new HttpError('EH_INVALID_REQUEST', 'a value in the request contains a character that cannot be stored (such as NUL, U+0000)');
  }
  const transient = transientDatabaseFault(err);
  if (transient) return new HttpError('EH_UNAVAILABLE', transient.message, { 'Retry-After': String(transient.retryAfter) });
  // PostgreSQL is away or refuses connections: the service cannot answer now, which is no error in the request
  if (isDatabaseUnreachable(err)) {
    return new HttpError('EH_UNAVAILABLE', 'the database (PostgreSQL) cannot be reached; retry after 5 s', { 'Retry-After': '5' });
  }
  const status = (err as { status?: number; expose?: boolean }).status;
  // errors raised by koa / raw-body with a client status (e.g. 400 from a bad header)
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: boolean }).expose) {
    return status === 404 ? new HttpError('EH_NOT_FOUND', (err as Error).message) : new HttpError('EH_INVALID_REQUEST', (err as Error).message, {}, status);
  }
  return undefined;
}

/**
 * What the log keeps of an unexpected error: its class, message, codes and stack. Never the whole object: a Sequelize
 * error carries the statement and its bound values (`sql`, `parameters`, `original`), which may hold a token or a
 * sealed secret; a PostgreSQL message or detail may quote a value, so quoted text in it is replaced.
 */
function sanitisedError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { type: typeof err };
  const e = err as Error & { code?: unknown; original?: { code?: unknown; constraint?: unknown; table?: unknown; routine?: unknown } };
  const quoted = /(["'])(?:(?!\1).){1,}\1/g;
  const out: Record<string, unknown> = { type: e.name, message: e.message.replace(quoted, '$1…$1') };
  const code = e.original?.code ?? e.code;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  if (e.original) Object.assign(out, { constraint: e.original.constraint, table: e.original.table, routine: e.original.routine });
  if (e.stack) out.stack = e.stack.split('\n').slice(1).join('\n');
  return out;
}

const unreachable = logThrottle(5000);
/** A warning that the database cannot be reached, at most one each 5 s (every request fails alike meanwhile). */
function noteUnreachable(ctx: Context, err: unknown): void {
  unreachable('database', (repeated) => requestLog(ctx).warn({ err: sanitisedError(err), repeated }, 'the database cannot be reached: answering 503'));
}

/**
 * Runs the rest of the request; every error leaves as `{error, message}` (an unexpected one is logged with the
 * request id and answered 500 bare), and a request no route answered as a 404 naming it.
 */
export async function answeringErrors(ctx: Context, next: () => Promise<unknown>): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) {
      throw new HttpError('EH_ROUTE_NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`);
    }
  } catch (err) {
    mapError(ctx, err);
  }
}

/** The answer for an error thrown by the request's handling (see answeringErrors). */
export function mapError(ctx: Context, err: unknown): void {
  if (isDatabaseUnreachable(err)) noteUnreachable(ctx, err);
  const transient = transientDatabaseFault(err);
  if (transient) requestLog(ctx)[transient.level]({ err: sanitisedError(err) }, transient.message);
  const known = answerOf(err);
  if (known) {
    ctx.status = known.status;
    ctx.set(known.headers);
    ctx.set(ERROR_CODE_HEADER, known.code);
    ctx.body = { error: known.error, message: known.message };
    return;
  }
  requestLog(ctx).error({ err: sanitisedError(err) }, 'unexpected error');
  ctx.status = 500;
  ctx.set(ERROR_CODE_HEADER, 'EH_INTERNAL_ERROR');
  ctx.body = { error: 'internal_error', message: `unexpected error; quote request id ${ctx.state.requestId} when reporting it` };
}
