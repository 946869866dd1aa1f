import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { QueryResultRow } from 'pg';
import { Sequelize, Transaction } from 'sequelize';
import { config } from './config.js';
import { securityConfig } from './securityConfig.js';

let sequelize: Sequelize | undefined;
let ready: Promise<Sequelize> | undefined;

const modelsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'models');

export function databaseUrl(): string {
  const url = config().databaseUrl;
  if (!url) throw new Error('DATABASE_URL is not set (npm start sets it for the embedded PostgreSQL)');
  return url;
}

function createSequelize(): Sequelize {
  return new Sequelize(databaseUrl(), {
    dialect: 'postgres',
    logging: false,
    pool: { max: Number(process.env.HUB_DB_POOL_MAX ?? 10), min: 0, idle: 10_000, acquire: 15_000 },
    define: { underscored: true, freezeTableName: true },
    dialectOptions: {
      application_name: `edgehub-${process.env.HUB_PROCESS ?? 'app'}`,
      // no statement holds a pooled connection for long (HUB_DB_STATEMENT_TIMEOUT_MS; 0 turns it off)
      ...(securityConfig().statementTimeoutMs > 0 ? { statement_timeout: securityConfig().statementTimeoutMs } : {}),
    },
  });
}

/**
 * Connects and initialises every model in shared/models (each file exports `initModel(sequelize)` and optionally
 * `associate()`), so a new resource only adds its own file.
 */
export function initDb(): Promise<Sequelize> {
  ready ??= (async () => {
    const s = createSequelize();
    const files = readdirSync(modelsDir).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort();
    const modules = await Promise.all(files.map((f) => import(pathToFileURL(path.join(modelsDir, f)).href)));
    for (const m of modules) m.initModel?.(s);
    for (const m of modules) m.associate?.();
    await s.authenticate();
    sequelize = s;
    return s;
  })();
  return ready;
}

export function db(): Sequelize {
  if (!sequelize) throw new Error('database not initialised: call initDb() first');
  return sequelize;
}

/** Runs `fn` in one transaction (READ COMMITTED); commits when it resolves, rolls back when it throws. */
export function withTransaction<T>(fn: (t: Transaction) => Promise<T>, options: { isolationLevel?: Transaction.ISOLATION_LEVELS } = {}): Promise<T> {
  return db().transaction({ isolationLevel: options.isolationLevel }, fn);
}

export async function closeDb(): Promise<void> {
  const s = sequelize;
  sequelize = undefined;
  ready = undefined;
  await s?.close();
}

interface PgClient {
  query<R extends QueryResultRow>(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[] }>;
}

interface ConnectionManager {
  getConnection(options: { type: 'read' | 'write' }): Promise<PgClient>;
  releaseConnection(connection: PgClient): void;
  /** sequelize-pool's pool (a read/write pair instead when read replicas are configured, which edgehub does not do). */
  pool?: { acquire?(): Promise<PgClient>; release?(connection: PgClient): void };
}

/**
 * Runs a named prepared statement (outside any transaction) on a connection of the Sequelize pool. PostgreSQL parses
 * and plans it once per connection; hot paths (API reads and creates, enrollment, execution bookkeeping) use this for
 * their few statements.
 *
 * The connection comes straight from the pool Sequelize keeps (same pool, same limits and counts): Sequelize's own
 * getConnection() only adds pool hooks (none are registered here), debug calls and awaits around the same acquire,
 * ~10-20 µs of a ~0.2 ms API read. It is still used while Sequelize has not yet learnt the server version (it does so
 * on its first connection) or if pool hooks are ever registered.
 */
export async function preparedQuery<R extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]> {
  const s = db();
  const manager = s.connectionManager as unknown as ConnectionManager;
  const pool = manager.pool;
  if (
    pool?.acquire === undefined ||
    pool.release === undefined ||
    (s as unknown as { options: { databaseVersion?: unknown } }).options.databaseVersion === 0 ||
    s.hasHook('beforePoolAcquire') ||
    s.hasHook('afterPoolAcquire')
  ) {
    const connection = await manager.getConnection({ type: 'write' });
    try {
      return (await connection.query<R>({ name, text, values })).rows;
    } finally {
      manager.releaseConnection(connection);
    }
  }
  const connection = await pool.acquire();
  try {
    return (await connection.query<R>({ name, text, values })).rows;
  } finally {
    pool.release(connection);
  }
}
