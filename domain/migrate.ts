import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { QueryInterface, Sequelize, Transaction } from 'sequelize';
import { config } from '../shared/config.js';
import { SequelizeStorage, Umzug } from 'umzug';
import { logger } from '../shared/logger.js';

export interface MigrationContext {
  context: QueryInterface;
}

type Migration = (params: MigrationContext) => Promise<unknown>;

/**
 * The migrations beside this module, in the form it runs in: the TypeScript sources, or the JavaScript they were
 * compiled to (the test run's compiled tree holds both). Either way a migration is recorded by its source's name
 * (`0001-foundation.ts`), so a database migrated by one form is up to date for the other.
 */
const here = fileURLToPath(import.meta.url);
const migrationsGlob = path.join(path.dirname(here), 'migrations', `*${path.extname(here)}`);
const recordedName = (name: string) => name.replace(/\.js$/, '.ts');

/**
 * HUB_PUBLIC_FRONTEND_TEMPLATE is the urlTemplate of the standard frontend `public`, applied at every
 * start; the endpoints of shares on it follow (they are the template with the share token in place of {token}).
 */
async function applyPublicFrontendTemplate(sequelize: Sequelize, transaction: Transaction): Promise<void> {
  const template = config().edge.publicFrontendTemplate;
  await sequelize.query(`UPDATE frontends SET url_template = :template WHERE hub_id IS NULL AND public_name = 'public' AND url_template <> :template`, {
    replacements: { template },
    transaction,
  });
  await sequelize.query(
    `UPDATE shares s SET frontend_endpoint = replace(:template, '{token}', s.z_id)
       FROM frontends f
      WHERE f.id = s.frontend_id AND f.hub_id IS NULL AND f.public_name = 'public'
        AND s.frontend_endpoint <> replace(:template, '{token}', s.z_id)`,
    { replacements: { template }, transaction },
  );
}

/**
 * Applies pending migrations in file-name order (`to`: up to and including that one; tests use it to build an older
 * schema). An advisory lock lets several processes call it at once safely.
 */
export async function migrate(sequelize: Sequelize, options: { to?: string } = {}): Promise<string[]> {
  const umzug = new Umzug({
    migrations: {
      glob: migrationsGlob,
      resolve: ({ name, path: file, context }) => {
        const load = () => import(pathToFileURL(file as string).href) as Promise<{ up: Migration; down?: Migration }>;
        return {
          name: recordedName(name),
          up: async () => (await load()).up({ context }),
          down: async () => (await load()).down?.({ context }),
        };
      },
    },
    context: sequelize.getQueryInterface(),
    storage: new SequelizeStorage({ sequelize, tableName: 'schema_migrations' }),
    logger: undefined,
  });
  return sequelize.transaction(async (t) => {
    // held by this transaction's connection while umzug works on other pool connections; released at commit
    await sequelize.query('SELECT pg_advisory_xact_lock(7226001)', { transaction: t });
    const applied = await umzug.up(options.to ? { to: options.to } : {});
    const names = applied.map((m) => m.name);
    if (names.length) logger.info({ migrations: names }, 'migrations applied');
    await applyPublicFrontendTemplate(sequelize, t);
    return names;
  });
}
