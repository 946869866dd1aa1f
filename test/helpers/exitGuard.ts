/**
 * Loaded by ava into every test process before its test file (`require` in ava's configuration). Once ava is done
 * with the file (every test and hook ended), the process should exit by itself; a timer, a socket or a reconnect loop
 * left running keeps it alive, and ava waits for it without a word (its inactivity timeout is off while any test of
 * the run has called `t.timeout`). So:
 *
 * - the process records, in `$TEST_WORK_DIR/workers/<pid>.json`, which file it runs and when ava was done with it: the
 *   test command's watchdog (scripts/testWatchdog.ts) reads it to name a process it has to kill;
 * - when the process is still alive TEST_EXIT_GRACE_MS (default 20 s) after ava was done, it says on stderr what keeps
 *   it alive (Node's list of active resources, and with TEST_LEAK_TRACE=1 where each was created) and exits with
 *   code 1, which ava reports as a failure of that file, killing the processes it started first (left behind, one
 *   holding the stderr ava reads would keep ava waiting). The timer is unref'd: a process that has nothing left
 *   never sees it.
 */
import { createHook } from 'node:async_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { registerCompletionHandler } from 'ava';
import { descendants, killAll, parents } from '../../scripts/testWatchdog.js';

const graceMs = Number(process.env.TEST_EXIT_GRACE_MS ?? 20_000);
const file = (() => {
  try {
    return path.relative(process.cwd(), fileURLToPath(test.meta.file));
  } catch {
    return String(test.meta.file);
  }
})();

const statusDir = process.env.TEST_WORK_DIR ? path.join(process.env.TEST_WORK_DIR, 'workers') : undefined;
function writeStatus(status: { finishedAt?: number }): void {
  if (!statusDir) return;
  mkdirSync(statusDir, { recursive: true });
  writeFileSync(path.join(statusDir, `${process.pid}.json`), JSON.stringify({ pid: process.pid, file, startedAt, ...status }));
}
const startedAt = Date.now();
writeStatus({});

/** With TEST_LEAK_TRACE=1: where each live handle and timer was made (costly: every async resource is tracked). */
const made = new Map<number, { type: string; stack: string; resource: WeakRef<object> }>();
const HANDLES = new Set([
  'Timeout',
  'TCPWRAP',
  'TCPCONNECTWRAP',
  'PIPEWRAP',
  'PIPECONNECTWRAP',
  'PROCESSWRAP',
  'UDPWRAP',
  'FSEVENTWRAP',
  'SIGNALWRAP',
  'TTYWRAP',
  'Immediate',
  'GETADDRINFOREQWRAP',
]);
if (process.env.TEST_LEAK_TRACE === '1') {
  createHook({
    init(asyncId, type, _trigger, resource) {
      if (!HANDLES.has(type)) return;
      const stack = (new Error().stack ?? '').split('\n').slice(3, 14).join('\n');
      made.set(asyncId, { type, stack, resource: new WeakRef(resource) });
    },
    destroy(asyncId) {
      made.delete(asyncId);
    },
  }).enable();
}

function liveTraces(): string[] {
  const out: string[] = [];
  for (const { type, stack, resource } of made.values()) {
    const r = resource.deref() as { hasRef?: () => boolean } | undefined;
    if (!r || (typeof r.hasRef === 'function' && !r.hasRef())) continue;
    out.push(`${type}\n${stack}`);
  }
  return out;
}

registerCompletionHandler(() => {
  writeStatus({ finishedAt: Date.now() });
  const timer = setTimeout(() => {
    const resources = process.getActiveResourcesInfo().filter((r) => r !== 'FSReqCallback');
    const lines = [
      `✘ ${file}: the test process is still alive ${graceMs} ms after ava was done with it; what holds it: ${resources.join(', ') || '(nothing Node lists)'}`,
      ...(made.size ? liveTraces() : ['  (TEST_LEAK_TRACE=1 says where each was made)']),
    ];
    // the processes it started go with it: left behind, one holding the stderr ava reads would keep ava waiting
    const children = descendants(process.pid, parents());
    if (children.length) lines.push(`  killed the ${children.length} process(es) it started: ${children.join(', ')}`);
    killAll(children);
    process.stderr.write(`${lines.join('\n')}\n`);
    process.exit(1);
  }, graceMs);
  timer.unref();
});
