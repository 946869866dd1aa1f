import { closeDb, initDb } from '../shared/db.js';
import { migrate } from '../domain/migrate.js';
import { presetSetting } from '../shared/settings.js';

presetSetting('HUB_PROCESS', 'release');
// a migration may rewrite a large table: the request-sized statement timeout does not apply to the release step
presetSetting('HUB_DB_STATEMENT_TIMEOUT_MS', '0');
const sequelize = await initDb();
await migrate(sequelize);
await closeDb();
