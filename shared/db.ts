import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg, { type QueryResultRow } from 'pg';
import { Sequelize, Transaction } from 'sequelize';
import { config } from './config.js';
import { logger } from './logger.js';
import { securityConfig } from './securityConfig.js';

let sequelize: Sequelize | undefined;
let ready: Promise<Sequelize> | undefined;

const modelsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'models');

export function databaseUrl(): string {
  const url = config().databaseUrl;
  if (!url) throw new Error('DATABASE_URL is not set (npm start sets it for the embedded PostgreSQL)');
  return url;
}

const poolMax = () => Number(process.env.HUB_DB_POOL_MAX ?? 10);
const applicationName = () => `edgehub-${process.env.HUB_PROCESS ?? 'app'}`;

function createSequelize(): Sequelize {
  return new Sequelize(databaseUrl(), {
    dialect: 'postgres',
    logging: false,
    pool: { max: poolMax(), min: 0, idle: 10_000, acquire: 15_000 },
    define: { underscored: true, freezeTableName: true },
    dialectOptions: {
      application_name: applicationName(),
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
  const p = statements;
  sequelize = undefined;
  ready = undefined;
  statements = undefined;
  await Promise.all([s?.close(), p?.end()]);
}

type TypeParser = (value: string) => unknown;

let statements: pg.Pool | undefined;

/**
 * The pool preparedQuery runs on: a pg.Pool beside Sequelize's, of the same size (HUB_DB_POOL_MAX), to the same
 * database, with the session Sequelize's connections get (its connect() sets these three) and Sequelize's type
 * parsers, so a statement answers the same on either. Sequelize's pool (sequelize-pool) spends more per checkout than
 * the statement itself on an API read: a timer, a deferred, log strings built and dropped, linear scans of its in-use
 * and idle lists (bench:api-ab: -9 µs of a ~0.15 ms read on this one); pg-pool takes an idle client off a list.
 * Connections are opened on demand and closed after 10 s idle, as in Sequelize's pool.
 */
function statementPool(): pg.Pool {
  if (statements) return statements;
  const manager = db().connectionManager as unknown as { getTypeParser(oid: number, format?: string): TypeParser };
  const timeout = securityConfig().statementTimeoutMs;
  const pool = new pg.Pool({
    connectionString: databaseUrl(),
    max: poolMax(),
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: 15_000,
    application_name: applicationName(),
    ...(timeout > 0 ? { statement_timeout: timeout } : {}),
    options: '-c standard_conforming_strings=on -c client_min_messages=warning -c TimeZone=UTC',
    types: { getTypeParser: (oid: number, format?: string) => manager.getTypeParser(oid, format) } as never,
  });
  // an idle connection that breaks (the server restarted, a network cut): the pool drops it and opens another
  pool.on('error', (err) => logger.warn({ err: err.message }, 'an idle database connection failed; it is replaced on next use'));
  statements = pool;
  return pool;
}

/** The statement pool's connections (telemetry), or undefined before its first statement. */
export function statementPoolStats(): { total: number; idle: number; waiting: number; max: number } | undefined {
  const p = statements;
  return p && { total: p.totalCount, idle: p.idleCount, waiting: p.waitingCount, max: p.options.max ?? poolMax() };
}

/**
 * Runs a named prepared statement (outside any transaction) on a connection of the statement pool (above).
 * PostgreSQL parses and plans it once per connection; hot paths (API reads and creates, enrollment, execution
 * bookkeeping) use this for their few statements.
 */
export async function preparedQuery<R extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]> {
  return (await statementPool().query<R>({ name, text, values })).rows;
}
