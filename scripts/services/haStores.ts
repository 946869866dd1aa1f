/**
 * The stores of a high-availability set-up on one machine: PostgreSQL with a synchronous standby behind one address
 * that moves (a relay, as HAProxy or a managed service's endpoint is on real machines), and Redis with a replica and
 * three sentinels. A watcher plays the part of the failover manager (Patroni, a managed service): when the primary
 * stops answering, it promotes the standby and points the address at it. Redis's own failover is Sentinel's.
 */
import net from 'node:net';
import path from 'node:path';
import { type PostgresWithStandby, startPostgresWithStandby } from './postgresStandby.js';
import { type Relay, startRelay } from './relay.js';
import { type RedisWithSentinels, startRedisWithSentinels } from './sentinel.js';

export interface HaStores {
  postgres: PostgresWithStandby;
  /** The moving address of PostgreSQL. */
  relay: Relay;
  redis: RedisWithSentinels;
  /** DATABASE_URL of the service: through the moving address. */
  databaseUrl: string;
  /** The environment every process of every node gets. */
  env: Record<string, string>;
  /** Resolves when the watcher has promoted the standby and moved the address (once). */
  promoted: Promise<{ seconds: number }>;
  stop(): Promise<void>;
}

const reachable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });

/**
 * Starts the stores in `dir` (made fresh by the caller). The watcher checks the primary every `checkMs` and fails over
 * after `failures` checks in a row found it away.
 */
export async function startHaStores(
  dir: string,
  options: { database?: string; checkMs?: number; failures?: number; log?: (line: string) => void } = {},
): Promise<HaStores> {
  const database = options.database ?? 'edgehub';
  const log = options.log ?? (() => undefined);
  const postgres = await startPostgresWithStandby(path.join(dir, 'postgres'), database);
  const relay = await startRelay(postgres.primary.port);
  const redis = await startRedisWithSentinels(path.join(dir, 'redis'));

  let stopped = false;
  let resolvePromoted!: (v: { seconds: number }) => void;
  const promoted = new Promise<{ seconds: number }>((resolve) => (resolvePromoted = resolve));
  const checkMs = options.checkMs ?? 500;
  const failures = options.failures ?? 3;
  let away = 0;
  let awaySince = 0;
  const watch = async () => {
    if (stopped) return;
    if (await reachable(postgres.primary.port)) away = 0;
    else if (++away === 1) awaySince = Date.now();
    if (away >= failures) {
      log(`postgres: the primary (port ${postgres.primary.port}) is away; promoting the standby (port ${postgres.standby.port})`);
      relay.switchTo(undefined);
      await postgres.promoteStandby();
      relay.switchTo(postgres.standby.port);
      const seconds = (Date.now() - awaySince) / 1000;
      log(`postgres: the standby is the primary now; the address ${relay.port} points at it (${seconds.toFixed(1)} s after the primary went)`);
      resolvePromoted({ seconds });
      return; // one failover: the old primary does not come back as a standby here
    }
    timer = setTimeout(() => void watch(), checkMs);
  };
  let timer = setTimeout(() => void watch(), checkMs);

  const databaseUrl = postgres.url(relay.port, database);
  return {
    postgres,
    relay,
    redis,
    databaseUrl,
    env: { DATABASE_URL: databaseUrl, REDIS_URL: '', REDIS_SENTINELS: redis.sentinelList, REDIS_SENTINEL_NAME: redis.name },
    promoted,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await relay.close();
      await Promise.all([postgres.stop(), redis.stop()]);
    },
  };
}
