/**
 * Server processes (PostgreSQL, redis-server) started by `npm start` and `npm test`.
 *
 * Both run in a session (process group) of their own: Ctrl-C in a terminal signals its whole foreground process
 * group at once, and the database must outlive the processes that use it, which `npm start` stops first (the edge
 * writes its last usage counters on the way out). Only their `stop()` stops them, or this process's end: a process
 * 'exit' hook signals what is still running, and on Linux they are started through `setpriv --pdeathsig` so that
 * the kernel signals them even when this process is SIGKILLed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { which } from './packages.js';

/** How long a server has to stop after its stop signal before it is SIGKILLed. */
const STOP_GRACE_MS = 30_000;

/** The servers started here and not yet exited, with the signal that stops each; signalled when this process exits. */
const running = new Map<ChildProcess, NodeJS.Signals>();
let exitHook = false;

let setprivPath: string | null | undefined;
/** `setpriv` (util-linux) where it can set a parent-death signal: Linux only. */
function setpriv(): string | undefined {
  if (setprivPath === undefined) setprivPath = (process.platform === 'linux' && which('setpriv')) || null;
  return setprivPath ?? undefined;
}

/**
 * Starts a server process in a session of its own (so that no terminal signal reaches it) that stops on
 * `stopSignal`. It also gets `stopSignal` when this process exits without stopping it: from an 'exit' hook, and on
 * Linux from the kernel as its parent-death signal (also when this process is SIGKILLed or crashes).
 */
export function spawnServer(
  command: string,
  args: string[],
  options: { stopSignal: NodeJS.Signals; uid?: number; gid?: number; env?: NodeJS.ProcessEnv },
): ChildProcess {
  const guard = setpriv();
  // setpriv sets the signal and execs the server (same pid); the signal survives exec, and a change of user before it
  const [file, argv] = guard ? [guard, ['--pdeathsig', options.stopSignal, '--', command, ...args]] : [command, args];
  const child = spawn(file, argv, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], uid: options.uid, gid: options.gid, env: options.env });
  running.set(child, options.stopSignal);
  child.once('exit', () => running.delete(child));
  child.once('error', () => running.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const [server, signal] of running) server.kill(signal);
    });
  }
  return child;
}

/** Sends `signal` and resolves once the server has exited (SIGKILL after STOP_GRACE_MS). */
export function stopServer(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}
