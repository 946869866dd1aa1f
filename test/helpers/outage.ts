/**
 * Outages for reliability tests, confined to one test file: PostgreSQL refuses this file's database (every open
 * connection is cut, new ones are refused, as when the server is stopped), and a redis-server of the file's own
 * that can be stopped and started again.
 */
import pg from 'pg';
import { freePort, startRedis, type LocalRedis } from '../../scripts/services/index.js';

export interface PostgresOutage {
  /** Lets connections in again. */
  end(): Promise<void>;
}

/** Cuts every connection to the database of `databaseUrl` and refuses new ones until `end()`. */
export async function stopDatabase(databaseUrl: string): Promise<PostgresOutage> {
  const name = new URL(databaseUrl).pathname.slice(1);
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`unexpected database name ${name}`);
  const admin = new pg.Client({ connectionString: process.env.TEST_POSTGRES_URL });
  await admin.connect();
  await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
  return {
    async end() {
      await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS true`);
      await admin.end();
    },
  };
}

export interface StoppableRedis {
  url: string;
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: nothing persists). */
  start(): Promise<void>;
}

/** A redis-server for one test file, on a port of its own. */
export async function ownRedis(): Promise<StoppableRedis> {
  const port = await freePort();
  let server: LocalRedis | undefined = await startRedis(undefined, port);
  return {
    url: server.url,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      server ??= await startRedis(undefined, port);
    },
  };
}
