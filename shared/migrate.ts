import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { QueryInterface, Sequelize } from 'sequelize';
import { SequelizeStorage, Umzug } from 'umzug';
import { logger } from './logger.js';

export interface MigrationContext {
  context: QueryInterface;
}

const migrationsGlob = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations', '*.{ts,js}');

/** Applies pending migrations in file-name order. An advisory lock lets several processes call it at once safely. */
export async function migrate(sequelize: Sequelize): Promise<string[]> {
  const umzug = new Umzug({
    migrations: { glob: migrationsGlob },
    context: sequelize.getQueryInterface(),
    storage: new SequelizeStorage({ sequelize, tableName: 'schema_migrations' }),
    logger: undefined,
  });
  return sequelize.transaction(async (t) => {
    // held by this transaction's connection while umzug works on other pool connections; released at commit
    await sequelize.query('SELECT pg_advisory_xact_lock(7226001)', { transaction: t });
    const applied = await umzug.up();
    const names = applied.map((m) => m.name);
    if (names.length) logger.info({ migrations: names }, 'migrations applied');
    return names;
  });
}
