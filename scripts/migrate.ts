import { closeDb, initDb } from '../shared/db.js';
import { migrate } from '../shared/migrate.js';

process.env.HUB_PROCESS ??= 'release';
const sequelize = await initDb();
await migrate(sequelize);
await closeDb();
