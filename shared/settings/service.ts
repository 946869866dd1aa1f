/** The settings of the service itself and its processes (shared/settings.ts gathers every group). */
import { z } from 'zod';
import { entry, optionalString, int, optionalInt, port, httpUrl, flag, HOST_PORT_LIST } from './kinds.js';

export const serviceSettings = {
  // the service
  PORT: entry(port(8080), 'service', 'API listen port'),
  HUB_DATA_DIR: entry(
    z.string().default('.data'),
    'service',
    'where the embedded PostgreSQL and Redis keep their data, and the generated admin token and secret key',
  ),
  DATABASE_URL: entry(
    optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
        .optional(),
    ),
    'service',
    'an external PostgreSQL (`postgres://...`) instead of the embedded one',
    'embedded',
  ),
  REDIS_URL: entry(
    optionalString.pipe(
      z
        .string()
        .regex(/^rediss?:\/\//, 'must be a redis:// URL')
        .optional(),
    ),
    'service',
    'an external Redis (`redis://...`) instead of a spawned redis-server',
    'spawned',
  ),
  REDIS_SENTINELS: entry(
    optionalString.pipe(z.string().regex(HOST_PORT_LIST, 'must be comma-separated host:port, e.g. 10.0.0.5:26379,10.0.0.6:26379').optional()),
    'service',
    'Redis through Sentinel: comma-separated `host:port` of the sentinels; every Redis connection of every process follows the master they name (REDIS_URL is then not used)',
    'none',
  ),
  REDIS_SENTINEL_NAME: entry(
    z
      .string()
      .regex(/^[\w.-]+$/, 'must be a master name as the sentinels know it')
      .default('mymaster'),
    'service',
    "the master's name at the sentinels (REDIS_SENTINELS)",
  ),
  REDIS_SENTINEL_PASSWORD: entry(optionalString, 'service', "the sentinels' own password (REDIS_SENTINELS), if they require one", 'none'),
  REDIS_PASSWORD: entry(
    optionalString,
    'service',
    'with REDIS_SENTINELS, the password of the master and its replicas, if they require one (with REDIS_URL it is part of the URL)',
    'none',
  ),
  HUB_ADMIN_TOKEN: entry(
    optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
    'service',
    'operator bearer token for `/admin/*` (at least 16 characters)',
    'generated on first start, stored in `$HUB_DATA_DIR/admin-token`, printed',
  ),
  PUBLIC_BASE_URL: entry(
    optionalString.pipe(httpUrl.optional()),
    'service',
    'base URL written into enrollment JWTs (`url` claim), download commands and links',
    '`http://localhost:$PORT`',
  ),
  HUB_SECRET_KEY: entry(
    optionalString,
    'service',
    '32-byte key (64 hex digits or base64) that encrypts secrets at rest; every process of a deployment needs the same one',
    'generated on first start, stored in `$HUB_DATA_DIR/secret-key`',
  ),
  HUB_TRUST_PROXY: entry(flag, 'service', 'trust `X-Forwarded-For`/`-Proto` from a reverse proxy in front of the API (client addresses for limits and logs)'),
  HUB_SHOW_SECRETS: entry(flag, 'service', '`npm start` prints connection URLs with their passwords (same as `--show-secrets`)'),
  HUB_REDIS_MAXMEMORY: entry(
    z
      .string()
      .regex(/^\d+(kb|mb|gb)?$/i, 'must be bytes or a size such as 512mb or 2gb')
      .default('2gb'),
    'service',
    '`maxmemory` of the redis-server `npm start` spawns (its policy is `noeviction`: queue data is never evicted); keep it well above `HUB_INSPECT_TOTAL_BYTES`',
  ),

  // processes
  HUB_PROCESS: entry(
    optionalString,
    'processes',
    "the process's role in logs, metrics and database connection names; set by each process itself (web, worker, clock, edge, release)",
    "the entry point's role",
  ),
  WEB_CONCURRENCY: entry(int(1, 64, 1), 'processes', 'how many web processes `npm start` runs on the API port'),
  HUB_RESTART_BACKOFF_MS: entry(int(1, 600_000, 1000), 'processes', "`npm start`'s first wait before restarting a child that died; doubles per crash"),
  HUB_RESTART_BACKOFF_MAX_MS: entry(int(1, 3_600_000, 30_000), 'processes', "`npm start`'s longest wait before restarting a child"),
  HUB_DB_POOL_MAX: entry(int(1, 1000, 10), 'processes', "PostgreSQL connections of a process's one pool, opened on demand and closed after 10 s idle"),
  HUB_GC_THREADS: entry(
    z.enum(['auto', 'single', 'parallel']).default('auto'),
    'processes',
    "how V8 collects garbage in the processes `npm start` runs: `single` on each process's own thread (`--single-threaded-gc`), `parallel` with helper threads (Node's default); `auto` is `single` on a machine of 2 cores or fewer, where the helper threads of every process's collector compete with the service's own work (about an eighth less CPU per enrollment over the first 600 after a start, measured with bench:enroll; half the CPU per MiB an edge carries over TCP shares, measured with bench:tcp)",
  ),
  HUB_GC_YOUNG_MB: entry(
    int(0, 16, 16),
    'processes',
    "the size, in MB, that the young generation's semi-spaces start at in the processes `npm start` runs (`--min-semi-space-size`; 0: V8's default, 1 MB, grown as the process allocates, up to 16 MB on 64-bit machines): at 16 a fresh process skips the many small collections of that growth (about 0.3 ms less CPU per enrollment over the first 600 after a start, measured with bench:enroll-outside); an idle process's memory is the same",
  ),
  HUB_GC_EDGE_OLD_MB: entry(
    int(0, 4096, 0),
    'processes',
    "the size, in MB, that the edge's old generation starts at under `npm start` (`--initial-old-space-size`; 0: V8's default). V8 counts the 64 KiB buffer of each socket read as external memory, and with the small old generation of an edge's heap every few hundred MB carried starts a full marking on the edge's thread: at 80 none starts, for about a tenth to a fifth less CPU per MiB of a TCP share, but HTTP/2 requests cost more (the scavenges of a larger old generation: 8-9 µs of collection per request against 3.5, a sixth fewer requests/s). For edges that carry mostly TCP shares and large transfers",
  ),
  HUB_EDGE_WORKERS: entry(
    optionalInt(1, 64),
    'processes',
    "processes of the edge sharing its ports (under `npm start`, children `edge.1`, `edge.2`, ...; the Procfile's `edge` forks them itself)",
    '`1`',
  ),
  HUB_EDGE_WORKER_INDEX: entry(
    optionalInt(0, 63),
    'processes',
    'set by the edge for each of its forked processes (places its metrics port); not for operators',
    'none',
  ),
  HUB_DEBUG_SERVICES: entry(flag, 'processes', "print the embedded PostgreSQL's own messages while `npm start` and `npm test` run it"),
  DEV_DNS_LISTEN: entry(
    z
      .string()
      .regex(/^[^,\s]+:\d+$/, 'must be host:port')
      .default('127.0.0.1:1053'),
    'processes',
    'where `npm run dev:dns` (a DNS server for trying custom frontends locally) listens',
  ),
  TEST_KEEP_WORK: entry(flag, 'processes', '`npm test` keeps the logs and data of its run and prints where'),
  TEST_WATCHDOG_AFTER_DONE_S: entry(
    int(10, 3600, 120),
    'processes',
    "`npm test` kills (and names, with the last lines of its log) a test process still alive this long after its file's last test and hook ended",
  ),
  TEST_WATCHDOG_STALL_S: entry(
    int(60, 7200, 480),
    'processes',
    '`npm test` kills every test process still running when its test runner has reported no result for this long (longer than the longest time a test gives itself)',
  ),
  NODE_ENV: entry(z.string().optional(), 'processes', "`development` re-reads the console's files on every request; `test` silences logs by default", 'none'),
};
