import pino from 'pino';

const level = process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'silent' : 'info');

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
});

export type Logger = typeof logger;
