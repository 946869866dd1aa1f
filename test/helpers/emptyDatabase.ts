/**
 * An empty database of its own on the test run's PostgreSQL (no template, no migrations), for tests that migrate a
 * database step by step: its URL, named `<prefix>_<random>`.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export async function emptyDatabase(prefix: string): Promise<string> {
  const base = process.env.TEST_POSTGRES_URL;
  if (!base) throw new Error('run the tests with `npm test` (it starts PostgreSQL for them)');
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return base.replace(/\/[^/]*$/, `/${name}`);
}
