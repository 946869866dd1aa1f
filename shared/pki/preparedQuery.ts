import type { QueryResultRow } from 'pg';
import { db } from '../db.js';

interface PgClient {
  query<R extends QueryResultRow>(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[] }>;
}

interface ConnectionManager {
  getConnection(options: { type: 'read' | 'write' }): Promise<PgClient>;
  releaseConnection(connection: PgClient): Promise<void>;
}

/**
 * Runs a named prepared statement on a connection of the Sequelize pool. PostgreSQL parses and plans it once per
 * connection; the enrollment hot path uses this for its few statements (the redemption statement is otherwise
 * re-planned on every call, a third of its cost).
 */
export async function preparedQuery<R extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]> {
  const manager = db().connectionManager as unknown as ConnectionManager;
  const connection = await manager.getConnection({ type: 'write' });
  try {
    return (await connection.query<R>({ name, text, values })).rows;
  } finally {
    await manager.releaseConnection(connection);
  }
}
