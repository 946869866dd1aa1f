// quick experiment: time the phases of insertSamples against a fresh bench database
import path from 'node:path';
import { benchWorkspace, startServices } from '../bench/harness.ts';
import { resetConfig } from '../shared/config.ts';
import { initDb, closeDb, db } from '../shared/db.ts';
import { insertSamples } from '../shared/metrics/store.ts';
const ws = benchWorkspace();
try {
  const s = await startServices(ws);
  Object.assign(process.env, { DATABASE_URL: s.databaseUrl, REDIS_URL: s.redisUrl, HUB_ADMIN_TOKEN: 'x'.repeat(20), HUB_DATA_DIR: path.join(ws.work, 'd') });
  resetConfig(); await initDb();
  await db().query(`INSERT INTO hubs (id, name, features, created_at, updated_at) VALUES ('h', 'h', '{}', now(), now())`);
  const now = Date.now();
  const mk = (b: number) => Array.from({ length: 5000 }, (_, j) => { const i = b * 5000 + j; return { hubId: 'h', shareId: i % 5 === 4 ? null : `s${i % 100}`, envZId: `e${i % 10}`, rx: i % 1000, tx: 1, timestamp: new Date(now - ((i * 7919) % 86_400_000)).toISOString() }; });
  for (const conc of [1, 4]) {
    for (let round = 0; round < 2; round++) {
      const t0 = performance.now(); let next = 0;
      await Promise.all(Array.from({ length: conc }, async () => { while (next < 40) await insertSamples(mk(next++)); }));
      console.log(`conc ${conc} round ${round}: ${Math.round(200000 / ((performance.now() - t0) / 1000))} samples/s`);
    }
  }
  await closeDb();
} finally { await ws.cleanUp(); }
process.exit(0);
