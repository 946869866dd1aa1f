import pino from 'pino';

const level = process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'silent' : 'info');

/**
 * Where log lines go: stdout, written asynchronously (sonic-boom), so a slow reader of stdout (a pipe, a terminal, a
 * log shipper) never blocks the event loop; lines that arrive while a write is in flight go out together in the next. Past 16 MiB waiting to be
 * written, further lines are dropped rather than held (memory stays bounded). pino flushes what is buffered when the
 * process exits.
 */
const destination = pino.destination({ dest: 1, sync: false, maxLength: 16 * 1024 * 1024 });

/** Process-wide JSON logger. Secrets are redacted by path as a second line of defence: never log them at all. */
export const logger = pino({
  level,
  base: { pid: process.pid, proc: process.env.HUB_PROCESS ?? 'app' },
  redact: {
    paths: [
      'req.headers.authorization',
      'headers.authorization',
      '*.token',
      '*.password',
      '*.clientSecret',
      '*.privateKey',
      '*.preSharedKey',
      '*.jwt',
    ],
    censor: '[redacted]',
  },
}, destination);

export type Logger = typeof logger;
