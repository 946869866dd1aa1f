import path from 'node:path';
import pino from 'pino';

const level = process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'silent' : 'info');

/** Keys whose values are secrets, wherever they sit in a logged object (top level and two levels down). */
const SECRET_KEYS = ['token', 'password', 'clientSecret', 'client_secret', 'privateKey', 'preSharedKey', 'jwt', 'authorization', 'secret', 'secretKey', 'adminToken'];
/** What a database error carries beyond its message: the statement and its bound values (a token, a sealed key). */
const ERROR_KEYS = ['sql', 'parameters', 'original', 'parent', 'fields', 'errors', 'detail'];

export const REDACTED_PATHS = [
  ...SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
  'req.headers.authorization',
  'headers.authorization',
  'req.headers.cookie',
  ...ERROR_KEYS.map((k) => `err.${k}`),
];

/**
 * Where log lines go: stdout at LOG_LEVEL, written asynchronously (sonic-boom) so that a slow reader of stdout (a
 * pipe, a terminal, a log shipper) never blocks the event loop; past 16 MiB waiting to be written further lines are
 * dropped rather than held (memory stays bounded), and what is buffered is flushed at exit. Lines are written in
 * batches of up to 64 KiB (LineBatcher), or every 250 ms when fewer arrive: each asynchronous write is a round trip
 * through libuv's thread pool, which cost the API ~10 µs per access line when every line (or every few) had one of
 * its own. With HUB_LOG_DIR, also
 * a file per process in that folder (`<proc>-<pid>.log`, at HUB_LOG_FILE_LEVEL, default debug; written synchronously
 * so nothing is lost at exit). The test command sets it, so that every line a test run writes can be scanned for the
 * secrets the tests created (test/helpers/logScan.ts).
 */
/**
 * Gathers log lines into chunks of up to 64 KiB before they reach sonic-boom (which writes each chunk asynchronously,
 * through libuv's thread pool): every such write is a round trip between threads that cost the API more CPU per
 * request than the line itself; 4 KiB chunks (sonic-boom's own minLength batching, before) measured 7.6-8.8 µs more
 * CPU per authenticated read than 64 KiB ones (bench:api-ab, 2026-11-23). A line is copied into the chunk's buffer as
 * it comes (kept as strings until the chunk is full, lines outlived young-generation collections and were copied,
 * then promoted, by the GC). Pending lines go on once 64 KiB are gathered, every 250 ms, and at exit (before
 * sonic-boom's own exit flush), so a line reaches stdout within a quarter of a second.
 */
class LineBatcher {
  private readonly chunk: Buffer;
  private bytes = 0;

  constructor(
    private readonly out: pino.DestinationStream & { flush?: (cb?: (err?: Error) => void) => void },
    private readonly batchBytes = 65536,
    flushMs = 250,
  ) {
    this.chunk = Buffer.allocUnsafeSlow(batchBytes);
    setInterval(() => this.drain(), flushMs).unref();
    process.prependListener('exit', () => this.drain());
    process.prependListener('beforeExit', () => this.drain());
  }

  write(line: string): boolean {
    // a line that may not fit (UTF-8 takes at most 3 bytes per UTF-16 unit) goes after the pending ones
    if (this.bytes + line.length * 3 > this.batchBytes) {
      this.drain();
      if (line.length * 3 > this.batchBytes) {
        this.out.write(line);
        return true;
      }
    }
    this.bytes += this.chunk.write(line, this.bytes, 'utf8');
    return true;
  }

  /** Hands the pending lines to the destination as one chunk. */
  drain(): void {
    if (this.bytes === 0) return;
    const text = this.chunk.toString('utf8', 0, this.bytes);
    this.bytes = 0;
    this.out.write(text);
  }

  flush(cb?: (err?: Error) => void): void {
    this.drain();
    if (this.out.flush) this.out.flush(cb);
    else cb?.();
  }
}

const dir = process.env.HUB_LOG_DIR;
const fileLevel = (process.env.HUB_LOG_FILE_LEVEL ?? 'debug') as pino.Level;
/**
 * The process's role in the logs: HUB_PROCESS when set (npm start's supervisor sets it), else the role of the
 * Procfile entry that started it (its script), else `app`. Computed when this module loads, before the entry's own
 * code runs, which is why the script is the source and not a variable the entry sets later.
 */
export function processRole(env: NodeJS.ProcessEnv = process.env, script = process.argv[1] ?? ''): string {
  if (env.HUB_PROCESS) return env.HUB_PROCESS;
  const entry = script.replace(/\\/g, '/');
  for (const [suffix, role] of [
    ['api/server.ts', 'web'],
    ['workers/index.ts', 'worker'],
    ['workers/clock.ts', 'clock'],
    ['edge/index.ts', 'edge'],
    ['scripts/migrate.ts', 'release'],
  ] as const) {
    if (entry.endsWith(suffix)) return role;
  }
  return 'app';
}
const role = processRole();

const streams: pino.StreamEntry[] = [];
if (level !== 'silent') {
  const stdout = new LineBatcher(pino.destination({ dest: 1, sync: false, maxLength: 16 * 1024 * 1024 }));
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

/** The streams that take info lines (the access log's). */
const infoStreams = streams.filter((s) => pino.levels.values[s.level as pino.Level] <= pino.levels.values.info).map((s) => s.stream);
const processBindings = `,"pid":${process.pid},"proc":${JSON.stringify(role)}`;

/** Whether access lines are written at all (LOG_LEVEL or HUB_LOG_FILE_LEVEL at info or below). */
export const accessLogEnabled = infoStreams.length > 0;

/**
 * The access log: one line per request, the same JSON line `logger.info({reqId, method, path, status, ms}, 'request')`
 * writes (level, time, pid, proc, the fields, msg), made only of values the request context has made safe (a
 * validated or generated request id, the method, the route template or a path with token segments replaced, the
 * status, the duration). It is formatted here and handed to the log streams directly, not through pino (a child
 * logger without the redaction pass, which is for objects whose contents we do not control): of an authenticated read
 * of ~135 µs of API CPU, the line through pino took ~15 µs (bench:api-ab with it removed, 2026-11-23) and formatted
 * here ~4.7 µs less. Everything else logs through `logger`, redacted.
 */
export function logAccess(reqId: string, method: string, path: string, status: number, ms: number): void {
  const line = `{"level":30,"time":${Date.now()}${processBindings},"reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},"status":${status},"ms":${ms},"msg":"request"}\n`;
  for (let i = 0; i < infoStreams.length; i++) infoStreams[i]!.write(line);
}
