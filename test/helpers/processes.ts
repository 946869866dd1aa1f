/** Child processes for tests: spawn a script of the project, keep the tail of its output, wait for a line. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { waitFor } from './stack.js';
import { scriptArgs } from './script.js';

export interface Spawned {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr, last 200 kB). */
  output(): string;
  /** Waits until its output matches `re` and returns the match. */
  waitForLine(re: RegExp, what: string, timeoutMs?: number): Promise<RegExpExecArray>;
  /** SIGKILLs it if it still runs. */
  kill(): Promise<void>;
}

/** `detached`: in a process group of its own (as a terminal runs a command), so that it can be signalled as a group. */
export function spawnScript(script: string, env: Record<string, string | undefined>, options: { detached?: boolean } = {}): Spawned {
  const child = spawn(process.execPath, scriptArgs(script), {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let out = '';
  const keep = (chunk: Buffer) => (out = (out + chunk.toString()).slice(-200_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    output: () => out,
    async waitForLine(re, what, timeoutMs = 60_000) {
      try {
        return await waitFor(async () => (re.exec(out) ?? undefined) as RegExpExecArray | undefined, { timeoutMs, what });
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- output of ${script} ---\n${out.slice(-4000)}`);
      }
    },
    async kill() {
      if (!alive()) return;
      child.kill('SIGKILL');
      await once(child, 'exit');
    },
  };
}

/** True while a process with this pid exists. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
