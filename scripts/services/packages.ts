/** Commands the service and its tests need beyond npm packages, installed with apt-get when missing (as root). */
import { spawnSync } from 'node:child_process';

export function which(cmd: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

interface DebianCommand {
  command: string;
  /** The Debian package that provides it. */
  pkg: string;
  /** What to tell a person who must install it themselves. */
  hint: string;
}

export const REDIS_SERVER: DebianCommand = {
  command: 'redis-server',
  pkg: 'redis-server',
  hint: 'Install it (Debian/Ubuntu: `sudo apt-get install redis-server`, macOS: `brew install redis`) or set REDIS_URL.',
};

/**
 * Makes sure each command is on PATH: the missing ones are installed in one apt-get run when we are root on a
 * Debian-like system; otherwise this throws, saying what to install.
 */
export function ensureCommands(needed: DebianCommand[]): void {
  let missing = needed.filter((n) => !which(n.command));
  if (missing.length && process.getuid?.() === 0 && which('apt-get')) {
    const pkgs = missing.flatMap((m) => m.pkg.split(' '));
    console.error(`${missing.map((m) => m.command).join(', ')} not found: installing Debian package(s) ${pkgs.join(' ')} (apt-get) ...`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    spawnSync('apt-get', ['install', '-y', '-qq', ...pkgs], { stdio: 'inherit', env });
    missing = missing.filter((n) => !which(n.command));
  }
  if (missing.length) throw new Error(missing.map((m) => `${m.command} is not on PATH. ${m.hint}`).join('\n'));
}
