import { closeDb, initDb } from '../shared/db.js';
import { migrate } from '../shared/migrate.js';

process.env.HUB_PROCESS ??= 'release';
// a migration may rewrite a large table: the request-sized statement timeout does not apply to the release step
process.env.HUB_DB_STATEMENT_TIMEOUT_MS ??= '0';
const sequelize = await initDb();
await migrate(sequelize);
await closeDb();
