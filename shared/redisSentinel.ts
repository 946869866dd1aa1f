/**
 * Redis through Sentinel (REDIS_SENTINELS): the connection options, the check every process makes at start, and the
 * watch on the master's moves that every connection of the process follows.
 */
import type { EventEmitter } from 'node:events';
import { Redis, type RedisOptions } from 'ioredis';
import { config } from './config.js';
import { logger } from './logger.js';
import { logThrottle } from './logThrottle.js';

type SentinelConfig = NonNullable<ReturnType<typeof config>['redisSentinel']>;

const masterAway = logThrottle(30_000);

/**
 * ioredis's Sentinel mode: each connection asks the sentinels for the master's address whenever it connects. A master
 * that dies drops its connections, which then ask again. A master that is demoted while it lives answers writes with
 * READONLY and ends blocked commands with UNBLOCKED (Redis 6.2 and later): either error makes the connection
 * reconnect, and so ask the sentinels, and the command is sent again. While no sentinel answers a connection keeps
 * asking (said once each 30 s), until its owner closes it (`closing`).
 *
 * A master demoted by a failover keeps taking writes until the sentinels reconfigure it, seconds later: connections
 * still on it would write where nobody reads. So every connection also follows the sentinels' `+switch-master`
 * announcement (followMasterSwitches). ioredis's own `failoverDetector` does the same, but its connections to the
 * sentinels are closed only by `disconnect()`, not when a connection ends by QUIT (how BullMQ closes its own): they
 * went on reconnecting to the sentinels after everything was closed.
 */
export function sentinelOptions(sentinel: SentinelConfig, closing: () => boolean): RedisOptions {
  return {
    sentinels: sentinel.sentinels,
    name: sentinel.name,
    sentinelPassword: sentinel.sentinelPassword,
    password: sentinel.password,
    reconnectOnError: (err: Error) => (/^(READONLY|UNBLOCKED)/.test(err.message) ? 2 : false),
    sentinelRetryStrategy: (n: number) => {
      if (closing()) return null;
      masterAway(`sentinels ${sentinel.name}`, (repeated) => logger.warn({ master: sentinel.name, repeated }, 'no sentinel answers; asking again'));
      return Math.min(n * 100, 2000);
    },
  };
}

interface Follower extends EventEmitter {
  readonly status: string;
  disconnect(reconnect?: boolean): void;
}

/** The process's live Sentinel-mode connections, and its subscriptions to the sentinels while there are any. */
const followers = new Set<Follower>();
let watchers: Redis[] = [];

/**
 * `connection` reconnects (and so asks the sentinels for the master) as soon as a sentinel announces that the master
 * moved. One subscription per sentinel for the whole process, open while it has a live Sentinel-mode connection.
 */
export function followMasterSwitches(connection: Follower): void {
  const join = () => {
    followers.add(connection);
    if (!watchers.length) watchers = watchSwitches();
  };
  join();
  connection.on('connect', join);
  connection.on('end', () => {
    followers.delete(connection);
    if (followers.size) return;
    for (const w of watchers) w.disconnect();
    watchers = [];
  });
}

function watchSwitches(): Redis[] {
  const sentinel = config().redisSentinel;
  if (!sentinel) return [];
  let lastSwitch = '';
  return sentinel.sentinels.map(({ host, port }) => {
    const w = new Redis({ host, port, password: sentinel.sentinelPassword, retryStrategy: (n) => Math.min(n * 200, 2000), maxRetriesPerRequest: null });
    w.on('error', () => undefined);
    void w.subscribe('+switch-master').catch(() => undefined);
    w.on('message', (_channel: string, message: string) => {
      const [name, , , host2, port2] = message.split(' ');
      // each sentinel announces it: the first announcement of a new address is acted on
      if (name !== sentinel.name || message === lastSwitch) return;
      lastSwitch = message;
      logger.warn({ master: name, address: `${host2}:${port2}` }, 'the sentinels moved the Redis master; every connection reconnects to it');
      for (const f of followers) if (f.status === 'ready' || f.status === 'connect') f.disconnect(true);
    });
    return w;
  });
}

/**
 * For a process's main when REDIS_SENTINELS is set: unless at least one sentinel answers and names the master, says why
 * in one line naming the setting and exits with status 2 (a typo in the list would otherwise be retried for ever,
 * with every request that needs Redis answered 503). A master that is away while its sentinels answer is not a reason
 * to stop: connections wait for the sentinels to name one.
 */
export async function refuseUnreachableSentinels(): Promise<void> {
  const problem = await sentinelsProblem();
  if (!problem) return;
  console.error(`edgehub: ${problem}`);
  process.exit(2);
}

/** Why the configured sentinels cannot be used, or undefined when one answers and knows the master (or there are none). */
export async function sentinelsProblem(timeoutMs = 3000): Promise<string | undefined> {
  const sentinel = config().redisSentinel;
  if (!sentinel) return undefined;
  const failures: string[] = [];
  let unknownMaster = false;
  for (const { host, port } of sentinel.sentinels) {
    const probe = new Redis({
      host,
      port,
      password: sentinel.sentinelPassword,
      lazyConnect: true,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      const master = (await probe.call('SENTINEL', 'get-master-addr-by-name', sentinel.name)) as string[] | null;
      if (master) return undefined;
      unknownMaster = true;
      failures.push(`${host}:${port}: knows no master named ${sentinel.name}`);
    } catch (err) {
      failures.push(`${host}:${port}: ${(err as Error).message}`);
    } finally {
      probe.disconnect();
    }
  }
  return unknownMaster
    ? `REDIS_SENTINEL_NAME: the sentinels of REDIS_SENTINELS know no master named ${sentinel.name} (${failures.join('; ')})`
    : `REDIS_SENTINELS: no sentinel answers (${failures.join('; ')})`;
}
