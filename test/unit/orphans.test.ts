/**
 * The test command's last resort against a run that never ends: a process a test process started and left behind
 * when it exited keeps the stderr pipe it inherited open, and the reader of that pipe (ava, for the test process's
 * output) waits for it for ever. scripts/testWatchdog.ts `killOrphans` finds such processes of one run by the run's
 * TEST_WORK_DIR in their environment and a parent without it, and kills them; the pipe then closes.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { killOrphans } from '../../scripts/testWatchdog.js';

/** Whether `pid` runs (a process killed but not yet reaped by whoever adopted it is a zombie: not running). */
const alive = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
};

test('a process left behind holding a test process stderr keeps its reader waiting until it is killed; other runs are left alone', async (t) => {
  const workDir = `/tmp/orphan-check-${process.pid}-${Date.now()}`;
  // P starts C on P's own stderr and exits at once: C is adopted by another process and holds the pipe
  const code = [
    "const c = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: ['ignore', 'ignore', 'inherit'] });",
    'console.log(c.pid);',
    'process.exit(0);',
  ].join('\n');
  const p = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TEST_WORK_DIR: workDir } });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.resume();
  let closed = false;
  p.stderr.once('close', () => (closed = true));
  await once(p, 'exit');
  const orphan = Number(out.trim());
  t.true(orphan > 0 && alive(orphan), `the process left behind runs (${out})`);
  t.teardown(() => {
    if (alive(orphan)) process.kill(orphan, 'SIGKILL');
  });

  await sleep(500);
  t.false(closed, 'the pipe stays open while the process left behind holds it: its reader would wait for ever');
  t.is(
    killOrphans(`${workDir}-another-run`, 'a check', undefined, () => undefined),
    0,
    "another run's processes are not touched",
  );
  t.true(alive(orphan));

  let report = '';
  t.is(
    killOrphans(workDir, 'a check', undefined, (text) => (report += text)),
    1,
  );
  t.regex(report, new RegExp(`a check: killed 1 process\\(es\\) left behind[^]*${orphan} \\(`), 'it is named');
  for (let i = 0; i < 100 && !closed; i++) await sleep(50);
  t.true(closed, 'the pipe closes once it is killed');
  t.false(alive(orphan));
});
