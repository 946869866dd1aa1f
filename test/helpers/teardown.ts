/**
 * Teardown that always ends: every step of a test's clean-up has a stated time, after which what is left is
 * destroyed and said on stderr (which file, which step, what was destroyed), and the clean-up goes on. A step that
 * hangs would otherwise keep its test process alive after its tests, and the run with it.
 */
import type { ChildProcess } from 'node:child_process';

const say = (line: string) => process.stderr.write(`teardown: ${line}\n`);

/**
 * Runs `step`, waiting `ms` at most. Past it, runs `destroy` (which returns what it destroyed), says so, and returns:
 * the step may still finish later, but nothing waits for it. A step that fails is said too, never thrown.
 */
export async function bounded(what: string, ms: number, step: () => Promise<unknown>, destroy?: () => string | undefined | void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    step().then(
      () => 'done' as const,
      (err: unknown) => err as Error,
    ),
    new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), ms);
    }),
  ]).finally(() => clearTimeout(timer));
  if (outcome === 'done') return;
  if (outcome === 'late') {
    const destroyed = destroy?.();
    say(`${what} did not finish within ${ms} ms${destroyed ? `; destroyed ${destroyed}` : ''}`);
    return;
  }
  say(`${what} failed: ${outcome instanceof Error ? outcome.message : String(outcome)}`);
}

/** Sends `signal` to a child process and waits `graceMs` for it to exit; then SIGKILLs it and says so. */
export async function stopChild(child: ChildProcess, what: string, { signal = 'SIGTERM' as NodeJS.Signals, graceMs = 10_000 } = {}): Promise<void> {
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  if (exited()) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await bounded(
    `${what} (pid ${child.pid}) after ${signal}`,
    graceMs,
    () => gone,
    () => {
      child.kill('SIGKILL');
      return 'it with SIGKILL';
    },
  );
  if (!exited()) await gone;
}
