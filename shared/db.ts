import pg, { type QueryResultRow } from 'pg';
import { Sequelize, Transaction } from 'sequelize';
import { config } from './config.js';
import { modelModules } from '../domain/models/index.js';
import { setting } from './settings.js';

let sequelize: Sequelize | undefined;
let ready: Promise<Sequelize> | undefined;

export function databaseUrl(): string {
  const url = config().databaseUrl;
  if (!url) throw new Error('DATABASE_URL is not set (npm start sets it for the embedded PostgreSQL)');
  return url;
}

export const applicationName = () => `edgehub-${setting('HUB_PROCESS') ?? 'app'}`;

function createSequelize(): Sequelize {
  return new Sequelize(databaseUrl(), {
    dialect: 'postgres',
    logging: false,
    // a pool held by slow statements makes the others wait at most HUB_DB_ACQUIRE_TIMEOUT_MS: then 503 with Retry-After
    pool: { max: config().dbPoolMax, min: 0, idle: 10_000, acquire: config().security.acquireTimeoutMs },
    define: { underscored: true, freezeTableName: true },
    hooks: { afterConnect: (connection: unknown) => refuseReadOnlyServer(connection as pg.Client) },
    dialectOptions: {
      application_name: applicationName(),
      // no statement holds a pooled connection for long (HUB_DB_STATEMENT_TIMEOUT_MS; 0 turns it off)
      ...(config().security.statementTimeoutMs > 0 ? { statement_timeout: config().security.statementTimeoutMs } : {}),
    },
  });
}

/**
 * A new connection that landed on a server that cannot take writes is closed at once, and what asked for it fails
 * with SQLSTATE 25006 (read_only_sql_transaction), which the API answers 503 with Retry-After: a standby in recovery
 * behind an address that has not moved yet in a failover, an old primary that came back as a standby, a server set
 * read-only. The pool never keeps such a connection, so once the address reaches a primary the next connection works.
 * (A server enters recovery only through a restart, which ends every connection it had: checking at connect covers
 * the connections that live on.)
 */
async function refuseReadOnlyServer(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ recovery: boolean; readonly: string }>(
    `SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS readonly`,
  );
  if (!rows[0].recovery && rows[0].readonly !== 'on') return;
  client.end().catch(() => undefined);
  throw Object.assign(
    new Error(`the database server takes no writes (${rows[0].recovery ? 'in recovery: a standby, or a failover under way' : 'read-only'})`),
    { code: '25006' },
  );
}

/** Connects and initialises every model listed in domain/models/index.ts, then their associations. */
export function initDb(): Promise<Sequelize> {
  ready ??= (async () => {
    const s = createSequelize();
    for (const m of modelModules) m.initModel(s);
    for (const m of modelModules) m.associate?.();
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

/** A connection of Sequelize's pool driven directly (its pg client, with Sequelize's session settings and type parsers). */
interface RawConnections {
  getConnection(options: { type: 'read' | 'write' }): Promise<pg.PoolClient>;
  releaseConnection(connection: pg.PoolClient): Promise<void>;
}

/**
 * Runs `fn` with one connection of the process's one pool (Sequelize's), for what the ORM would only slow down or
 * cannot say: a prepared statement, a COPY, a snapshot opened and read in one round trip. The connection goes back
 * to the pool when `fn` settles; `fn` ends any transaction it opened.
 */
export async function withConnection<T>(fn: (client: pg.PoolClient) => Promise<T>, type: 'read' | 'write' = 'write'): Promise<T> {
  const manager = db().connectionManager as unknown as RawConnections;
  const client = await manager.getConnection({ type });
  try {
    return await fn(client);
  } finally {
    await manager.releaseConnection(client);
  }
}

/**
 * The hub condition of a prepared statement that finds a row by its primary (or another unique) key: `hub_id IS NOT
 * DISTINCT FROM $n`, which means `hub_id = $n` for the NOT NULL column and which PostgreSQL never serves with an index.
 * A named statement's plan is cached per connection; made while a table is empty (every index then looks as good as
 * another), a plain `hub_id = $n` can tie the unique key with a (hub_id, ...) index and the tie goes to the index
 * created last, which then filters the key out of all the hub's rows on every execution, for as long as the
 * connection lives. With the hub's condition out of the indexes' reach, only an index on the key can serve the
 * statement: one row, whatever the table's size when the plan was made (test/system/query-plans.test.ts).
 */
export const HUB_MATCHES = (param: string, column = 'hub_id') => `${column} IS NOT DISTINCT FROM ${param}`;

/**
 * Runs a named prepared statement (outside any transaction) on a connection of the pool. PostgreSQL parses and plans
 * it once per connection; hot paths (API reads and creates, enrollment, execution bookkeeping) use this for their few
 * statements.
 */
export function preparedQuery<R extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]> {
  return withConnection(async (client) => (await client.query<R>({ name, text, values })).rows);
}
