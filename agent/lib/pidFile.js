/**
 * `edgehub agent drain [--dir DIR]`: the running `agent run` of an identity folder writes its process id to
 * `DIR/agent.pid` (removed when it stops); drain sends that process SIGTERM (which drains it) and waits until it has
 * stopped.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EnrollError } from './errors.js';

const PID_FILE = 'agent.pid';

/** @param {number} pid */
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === 'EPERM';
  }
};

/**
 * Writes this process's id into the identity folder; returns what removes it (only while it is still this one's).
 * @param {string} dir
 * @returns {() => void}
 */
export function writePidFile(dir) {
  const file = path.join(dir, PID_FILE);
  try {
    writeFileSync(file, `${process.pid}\n`, { mode: 0o644 });
  } catch {
    return () => undefined;
  }
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // gone already
    }
  };
}

/**
 * Drains the agent running with `dir` and waits until it has stopped (at most `waitMs`); its process id.
 * @param {string} dir
 * @param {(line: string) => void} log
 * @param {number} [waitMs]
 * @returns {Promise<number>}
 */
export async function drainRunning(dir, log, waitMs = 10 * 60_000) {
  const file = path.join(dir, PID_FILE);
  let pid;
  try {
    pid = Number(readFileSync(file, 'utf8').trim());
  } catch {
    throw new EnrollError(`no agent is running with ${dir} (no ${file}; edgehub agent run writes it)`);
  }
  if (!Number.isInteger(pid) || pid <= 1 || !alive(pid)) {
    rmSync(file, { force: true });
    throw new EnrollError(`no agent is running with ${dir} (${file} names no running process)`);
  }
  try {
    process.kill(pid, 'SIGTERM');
  } catch (err) {
    throw new EnrollError(`could not signal agent process ${pid}: ${/** @type {Error} */ (err).message}`);
  }
  log(`draining agent process ${pid}`);
  const end = Date.now() + waitMs;
  while (alive(pid)) {
    if (Date.now() > end) throw new EnrollError(`agent process ${pid} still runs after ${Math.round(waitMs / 1000)} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return pid;
}
