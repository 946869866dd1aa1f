/**
 * Processes starting at once on a fresh data folder never read a half-written admin token or secret key: many rounds
 * of four threads creating both at the same instant must all agree on complete values.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';

test('concurrent first starts agree on one complete admin token and secret key', (t) => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'first-start-'));
  chmodSync(dir, 0o755);
  const child = spawnSync(process.execPath, ['--import', 'tsx', 'test/helpers/firstStartRace.ts', dir, '400'], { encoding: 'utf8', timeout: 90_000 });
  t.is(child.status, 0, child.stderr);
  const result = JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as { rounds: number; bad: number; examples: string[] };
  t.is(result.rounds, 400);
  t.is(result.bad, 0, `rounds with a torn or differing secret: ${result.bad}; e.g. ${result.examples.join('; ')}`);
});
