import { randomBytes } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import { config } from '../../shared/config.js';
import { DomainError, refusal, unavailable } from '../../shared/errors.js';
import { HttpError } from '../httpError.js';
import { readyRedis } from '../../shared/redis.js';
import { sha256 } from '../../shared/secrets.js';
import { authenticate, type Principal } from './auth.js';
import { isOwnOrigin, publicOrigin } from './crossSite.js';

/**
 * Who may use the queue UI (bull-board under /admin/queues), and how.
 *
 * - Reading (GET, HEAD): the admin token (Bearer, or Basic with user `admin`, which a browser asks for on the 401
 *   challenge), or the session cookie that such a request was given.
 * - Anything else: the admin token in the Authorization header (a cookie alone is never enough), a JSON body
 *   (`Content-Type: application/json`) and an `Origin` that is the service's own (crossSite.ts). An HTML
 *   form (url-encoded, text/plain, multipart) or a page of another origin, a share's included, cannot meet all three;
 *   the queues are read-only in bull-board besides (app.ts), so no request adds, retries or removes a job.
 * - The session: 32 random bytes in an HttpOnly, SameSite=Strict cookie scoped to /admin/queues; Redis holds only
 *   its SHA-256, with an expiry of QUEUE_SESSION_SECONDS. `POST /admin/queues/sign-out` (a write: the three rules
 *   above) revokes every queue UI session and clears the cookie.
 */
export const QUEUES_PREFIX = '/admin/queues';
const QUEUES_COOKIE = 'edgehub_queues';
const QUEUE_SESSION_SECONDS = 8 * 3600;
const SIGN_OUT_PATH = `${QUEUES_PREFIX}/sign-out`;

const READS = new Set(['GET', 'HEAD']);
const CHALLENGE = { 'WWW-Authenticate': 'Basic realm="edgehub operator: user admin, password the admin token", charset="UTF-8"' };
const ADMIN: Principal = Object.freeze({ kind: 'admin', name: 'admin' });

const sessionKey = (digest: string) => `${config().queuePrefix}:queues-session:${digest}`;
const digestOf = (value: string) => sha256(value).toString('hex');

const isQueuesPath = (path: string) => path === QUEUES_PREFIX || path.startsWith(`${QUEUES_PREFIX}/`);

/** A new session: the cookie's value (returned, never stored) and its digest in Redis with the expiry. */
async function openSession(): Promise<string> {
  const value = randomBytes(32).toString('base64url');
  await (await readyRedis()).set(sessionKey(digestOf(value)), '1', 'EX', QUEUE_SESSION_SECONDS);
  return value;
}

async function sessionIsOpen(value: string | undefined): Promise<boolean> {
  if (!value || !/^[\w-]{43}$/.test(value)) return false;
  try {
    return (await (await readyRedis()).exists(sessionKey(digestOf(value)))) === 1;
  } catch {
    return false; // Redis away: the admin token still works
  }
}

/** Revokes every queue UI session (SCAN, not KEYS: the keyspace holds the queues too). */
async function revokeQueueSessions(): Promise<number> {
  const client = await readyRedis().catch(() => {
    throw unavailable('Redis, where queue UI sessions are kept, cannot be reached; no session was revoked', 5);
  });
  let cursor = '0';
  let removed = 0;
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', sessionKey('*'), 'COUNT', 500);
    cursor = next;
    if (keys.length) removed += await client.del(...keys);
  } while (cursor !== '0');
  return removed;
}

/** The three rules every write under /admin/queues meets; the first one missing is named. */
async function checkWrite(ctx: Context): Promise<void> {
  const principal = await authenticateOrChallenge(ctx);
  if (principal.kind !== 'admin') throw refusal('EH_ADMIN_REQUIRED', 'the queue UI needs the admin token');
  if (!ctx.is('application/json')) throw refusal('EH_ORIGIN_REFUSED', 'a change through the queue UI must be sent as application/json');
  const origin = ctx.get('origin');
  if (!origin || !isOwnOrigin(ctx, origin)) {
    throw refusal(
      'EH_ORIGIN_REFUSED',
      `a change through the queue UI must come from ${publicOrigin()} (Origin: ${origin ? JSON.stringify(origin.slice(0, 200)) : 'none'})`,
    );
  }
}

async function authenticateOrChallenge(ctx: Context): Promise<Principal> {
  try {
    return await authenticate(ctx.get('authorization'));
  } catch (err) {
    if (err instanceof DomainError) throw new HttpError(err.code, err.message, CHALLENGE);
    throw err;
  }
}

function setCookie(ctx: Context, value: string, maxAgeSeconds: number): void {
  ctx.cookies.set(QUEUES_COOKIE, value, {
    httpOnly: true,
    sameSite: 'strict',
    path: QUEUES_PREFIX,
    secure: ctx.secure,
    maxAge: maxAgeSeconds * 1000,
    overwrite: true,
  });
}

/** Guards `board` (the bull-board Koa middleware): reads with the token or a session, writes by the rules above. */
export function guardQueueUi(board: Middleware): Middleware {
  return async (ctx: Context, next: Next) => {
    if (!isQueuesPath(ctx.path)) return next();
    if (!READS.has(ctx.method)) {
      await checkWrite(ctx);
      ctx.state.principal = ADMIN;
      if (ctx.path === SIGN_OUT_PATH && ctx.method === 'POST') {
        const revoked = await revokeQueueSessions();
        setCookie(ctx, '', 0);
        ctx.body = { revoked };
        return;
      }
      return board(ctx, next);
    }
    if (!ctx.get('authorization') && (await sessionIsOpen(ctx.cookies.get(QUEUES_COOKIE)))) {
      ctx.state.principal = ADMIN;
      return board(ctx, next);
    }
    const principal = await authenticateOrChallenge(ctx);
    if (principal.kind !== 'admin') throw refusal('EH_ADMIN_REQUIRED', 'the queue UI needs the admin token');
    ctx.state.principal = principal;
    if (!(await sessionIsOpen(ctx.cookies.get(QUEUES_COOKIE)))) {
      try {
        setCookie(ctx, await openSession(), QUEUE_SESSION_SECONDS);
      } catch {
        // Redis away: no session this time; the page still loads with the token
      }
    }
    return board(ctx, next);
  };
}
