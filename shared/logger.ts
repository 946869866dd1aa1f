import path from 'node:path';
import pino from 'pino';
import { setting } from './settings.js';

const level = setting('LOG_LEVEL') ?? (setting('NODE_ENV') === 'test' ? 'silent' : 'info');

/** Keys whose values are secrets, wherever they sit in a logged object (top level and two levels down). */
const SECRET_KEYS = [
  'token',
  'password',
  'clientSecret',
  'client_secret',
  'privateKey',
  'preSharedKey',
  'jwt',
  'authorization',
  'secret',
  'secretKey',
  'adminToken',
  'proof',
];
/** What a database error carries beyond its message: the statement and its bound values (a token, a sealed key). */
const ERROR_KEYS = ['sql', 'parameters', 'original', 'parent', 'fields', 'errors', 'detail'];

const REDACTED_PATHS = [
  ...SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
  'req.headers.authorization',
  'headers.authorization',
  'req.headers.cookie',
  ...ERROR_KEYS.map((k) => `err.${k}`),
];

/**
 * Where log lines go: stdout at LOG_LEVEL, written asynchronously (sonic-boom) so that a slow reader of stdout (a
 * pipe, a terminal, a log shipper) never blocks the event loop; past 16 MiB waiting to be written further lines are
 * dropped rather than held (memory stays bounded), and what is buffered is flushed at exit (pino registers that).
 * Lines are written in chunks of at least 64 KiB, or every 250 ms when fewer arrive (sonic-boom's minLength and
 * periodicFlush): each asynchronous write is a round trip through libuv's thread pool, which cost the API ~10 µs per
 * access line when every line had one of its own. With HUB_LOG_DIR, also
 * a file per process in that folder (`<proc>-<pid>.log`, at HUB_LOG_FILE_LEVEL, default debug; written synchronously
 * so nothing is lost at exit). The test command sets it, so that every line a test run writes can be scanned for the
 * secrets the tests created (test/helpers/logScan.ts).
 */

const dir = setting('HUB_LOG_DIR');
const fileLevel = setting('HUB_LOG_FILE_LEVEL') as pino.Level;
/**
 * The process's role in the logs: HUB_PROCESS when set (npm start's supervisor sets it), else the role of the
 * Procfile entry that started it (its script), else `app`. Computed when this module loads, before the entry's own
 * code runs, which is why the script is the source and not a variable the entry sets later.
 */
function processRole(script = process.argv[1] ?? ''): string {
  const named = setting('HUB_PROCESS');
  if (named) return named;
  // the source or the JavaScript compiled from it
  const entry = script.replace(/\\/g, '/').replace(/\.[jt]s$/, '');
  for (const [suffix, role] of [
    ['api/server', 'web'],
    ['workers/index', 'worker'],
    ['workers/clock', 'clock'],
    ['edge/index', 'edge'],
    ['scripts/migrate', 'release'],
  ] as const) {
    if (entry.endsWith(suffix)) return role;
  }
  return 'app';
}
const role = processRole();

const streams: pino.StreamEntry[] = [];
if (level !== 'silent') {
  // sonic-boom gathers lines and writes them in chunks of at least 64 KiB, or every 250 ms, whichever comes first
  const stdout = pino.destination({ dest: 1, sync: false, minLength: 64 * 1024, maxWrite: 256 * 1024, periodicFlush: 250, maxLength: 16 * 1024 * 1024 });
  streams.push({ level: level as pino.Level, stream: stdout });
}
if (dir) {
  const file = path.join(dir, `${role}-${process.pid}.log`);
  streams.push({ level: fileLevel, stream: pino.destination({ dest: file, sync: true, mkdir: true }) });
}
const lowest = dir ? (level === 'silent' || pino.levels.values[fileLevel] < pino.levels.values[level] ? fileLevel : level) : level;

/** Process-wide JSON logger. Secrets are redacted by path as a second line of defence: never log them at all. */
export const logger = pino(
  {
    level: lowest,
    base: { pid: process.pid, proc: role },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  },
  streams.length === 1 ? streams[0].stream : pino.multistream(streams),
);

export type Logger = typeof logger;

/**
 * The access log's logger: one line per request, `{reqId, method, path, status, ms}` with msg `request`. Its fields
 * are made safe by the request context (a validated or generated id, the method, the route template or a path with
 * token segments replaced, numbers), so this child logger skips the redaction pass (pino's `redact` option, empty
 * here): with it, the line cost the API ~10 µs more per request (bench:api-ab, 2026-11-25).
 */
const access = logger.child({}, { redact: [] });

/** Whether access lines are written at all (LOG_LEVEL or HUB_LOG_FILE_LEVEL at info or below). */
export const accessLogEnabled = access.isLevelEnabled('info');

/** The access line of a request, from values the request context has made safe (api/middleware/requestEdge.ts). */
export function logAccess(reqId: string, method: string, path: string, status: number, ms: number): void {
  access.info({ reqId, method, path, status, ms }, 'request');
}
