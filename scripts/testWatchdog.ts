/**
 * The test command's watchdog over ava's test processes. A test process that ava is done with should exit by itself;
 * when something keeps it alive, ava waits for it in silence (its own inactivity timeout is off while any test of the
 * run has called `t.timeout`), and a run would sit until CI's limit. test/helpers/exitGuard.ts makes such a process
 * exit on its own after a short grace; this watchdog is for the process that cannot (its event loop blocked, a hook
 * that never ends):
 *
 * - a test process still alive `afterDoneMs` after ava was done with its file (the file's status in
 *   `<workDir>/workers/<pid>.json`, written by exitGuard) is killed, with every process it started;
 * - when ava has reported no result for `stallMs` (longer than the longest `t.timeout` of the suite), every test
 *   process still running is killed the same way.
 *
 * Each kill is reported on stderr by file name with the last lines of that process's log, and counted: ava then
 * reports the file as failed, and the run fails in minutes.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface WatchdogOptions {
  workDir: string;
  logDir: string;
  afterDoneMs?: number;
  stallMs?: number;
  intervalMs?: number;
}

interface Watchdog {
  /** Called for each result ava reports. */
  activity(): void;
  /** How many test processes it killed. */
  readonly killed: number;
  stop(): void;
}

interface Status {
  pid: number;
  file: string;
  startedAt: number;
  finishedAt?: number;
}

/** pid -> parent pid of every process, from /proc. */
export function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // the command name is in parentheses and may hold spaces: the fields after its closing one are plain
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(entry), Number(fields[1]));
    } catch {
      // the process ended while we read
    }
  }
  return out;
}

export function descendants(root: number, tree: Map<number, number>): number[] {
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, parent] of tree) {
      if (parent === pid) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return found;
}

/** SIGKILLs each of `pids` (one already gone is passed over). */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/**
 * Processes of this run that a test process started and left behind when it exited: the run's TEST_WORK_DIR in their
 * environment, and a parent without it (init, or whichever process adopted them), other than `except` (ava itself).
 * One holding the stderr pipe ava reads from its test process keeps ava waiting after its last result, for ever: they
 * are killed (with what they started) and named. Returns how many.
 */
export function killOrphans(workDir: string, why: string, except?: number, log: (text: string) => void = (text) => void process.stderr.write(text)): number {
  const tree = parents();
  const marker = `\0TEST_WORK_DIR=${workDir}\0`;
  const marked = (pid: number) => {
    try {
      return `\0${readFileSync(`/proc/${pid}/environ`, 'utf8')}\0`.includes(marker);
    } catch {
      return false;
    }
  };
  const orphans: string[] = [];
  for (const [pid, parent] of tree) {
    if (pid === except || pid === process.pid || !marked(pid) || marked(parent)) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 160);
    } catch {
      // gone
    }
    orphans.push(`${pid} (${command})`);
    killAll([pid, ...descendants(pid, tree)]);
  }
  if (orphans.length)
    log(`✘ watchdog: ${why}: killed ${orphans.length} process(es) left behind by test processes that exited:\n${orphans.map((o) => `    ${o}`).join('\n')}\n`);
  return orphans.length;
}

function lastLogLines(logDir: string, pid: number, count = 25): string[] {
  if (!existsSync(logDir)) return [];
  const own = readdirSync(logDir).filter((f) => f.endsWith(`-${pid}.log`));
  const lines: string[] = [];
  for (const f of own) {
    const text = readFileSync(path.join(logDir, f), 'utf8');
    lines.push(...text.trimEnd().split('\n').slice(-count));
  }
  return lines.map((l) => (l.length > 400 ? `${l.slice(0, 400)}...` : l));
}

export function watchAva(avaPid: number, options: WatchdogOptions): Watchdog {
  const afterDoneMs = options.afterDoneMs ?? 120_000;
  const stallMs = options.stallMs ?? 8 * 60_000;
  const statusDir = path.join(options.workDir, 'workers');
  let lastActivity = Date.now();
  let killed = 0;

  const readStatus = (pid: number): Status | undefined => {
    try {
      return JSON.parse(readFileSync(path.join(statusDir, `${pid}.json`), 'utf8')) as Status;
    } catch {
      return undefined;
    }
  };

  const kill = (pid: number, status: Status | undefined, why: string, tree: Map<number, number>) => {
    const children = descendants(pid, tree);
    const report = [
      `✘ watchdog: killed the test process of ${status?.file ?? '(an unknown file)'} (pid ${pid}): ${why}`,
      ...(children.length ? [`  with the ${children.length} process(es) it started: ${children.join(', ')}`] : []),
      '  the last lines of its log:',
      ...lastLogLines(options.logDir, pid).map((l) => `    ${l}`),
    ];
    process.stderr.write(`${report.join('\n')}\n`);
    killAll([pid, ...children]);
    killed++;
  };

  const check = () => {
    const tree = parents();
    const workers = [...tree].filter(([, parent]) => parent === avaPid).map(([pid]) => pid);
    const now = Date.now();
    const stalled = now - lastActivity > stallMs;
    for (const pid of workers) {
      const status = readStatus(pid);
      if (status?.finishedAt && now - status.finishedAt > afterDoneMs) {
        kill(pid, status, `still alive ${Math.round((now - status.finishedAt) / 1000)} s after its last test and hook ended`, tree);
      } else if (stalled && status) {
        kill(pid, status, `ava reported no result for ${Math.round((now - lastActivity) / 1000)} s`, tree);
      }
    }
    if (stalled) {
      killed += killOrphans(options.workDir, `ava reported no result for ${Math.round((now - lastActivity) / 1000)} s`, avaPid);
      lastActivity = now;
    }
  };
  const timer = setInterval(check, options.intervalMs ?? 5000);
  timer.unref();

  return {
    activity() {
      lastActivity = Date.now();
    },
    get killed() {
      return killed;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
