/** The database pool's connections by state, read at scrape time. */
import client from 'prom-client';
import { db } from '../db.js';
import { registry } from './registry.js';

interface PoolGaugeStats {
  inUse: number;
  idle: number;
  max: number;
  waiting: number;
}

/** A gauge of a connection pool's connections by state, read at scrape time (nothing while the pool does not exist). */
function poolGauge(name: string, help: string, stats: () => PoolGaugeStats | undefined): void {
  new client.Gauge({
    name,
    help,
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const pool = stats();
      if (!pool) return;
      this.set({ state: 'in_use' }, pool.inUse);
      this.set({ state: 'idle' }, pool.idle);
      this.set({ state: 'max' }, pool.max);
      this.set({ state: 'waiting' }, pool.waiting);
    },
  });
}

poolGauge(
  'edgehub_db_pool_connections',
  "The process's database pool (Sequelize's; prepared statements, COPY and snapshots borrow from it too) by state: in use, idle, the maximum, and callers waiting for one",
  () => {
    let pool: { available: number; using: number; waiting: number; maxSize: number } | undefined;
    try {
      pool = (db().connectionManager as unknown as { pool?: typeof pool }).pool;
    } catch {
      return undefined; // not connected in this process (yet)
    }
    return pool && { inUse: pool.using, idle: pool.available, max: pool.maxSize, waiting: pool.waiting };
  },
);
