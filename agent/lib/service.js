/**
 * `edgehub agent install-service`: the agent as a systemd service. The unit runs `edgehub agent run` with the
 * identity folder and the edge options given here, as the user who owns the identity's key (or --user), restarts it
 * whatever way it ended, and may write nothing but that folder (where a renewed certificate goes).
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EnrollError } from './errors.js';
import { identityExists } from './identity.js';

export const DEFAULT_UNIT_FILE = '/etc/systemd/system/edgehub-agent.service';

/**
 * One word of a systemd command line: `%` and `$` doubled (specifiers, variables), quoted with C-style escapes when
 * it has what would split or unquote it.
 * @param {string} word
 */
function unitWord(word) {
  const escaped = word.replace(/%/g, '%%').replace(/\$/g, '$$$$');
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped) ? escaped : `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * The name of the user with `uid`, from /etc/passwd; undefined when it has none there.
 * @param {number} uid
 */
function userName(uid) {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , id] = line.split(':');
      if (name && Number(id) === uid) return name;
    }
  } catch {
    // no passwd file: the caller falls back
  }
  return undefined;
}

/**
 * The command that runs this program again: the single executable alone (its argv[1] is itself), or node and the
 * script.
 */
function thisProgram() {
  const script = process.argv[1] ? path.resolve(process.argv[1]) : undefined;
  return !script || script === process.execPath ? [process.execPath] : [process.execPath, script];
}

/**
 * @param {{ dir: string, user?: string, edges?: string[], allow?: string[], program?: string[], pool?: { weight?: number, priority?: number, drainMs?: number } }} options
 * @returns {{ unit: string, user: string }}
 */
export function agentUnit(options) {
  const dir = path.resolve(options.dir);
  if (!identityExists(dir))
    throw new EnrollError(`no agent identity in ${dir}: run edgehub agent enroll <jwt> --dir ${dir} first (as the user the service is to run as)`);
  let owner;
  try {
    owner = statSync(path.join(dir, 'agent.key')).uid;
  } catch {
    owner = process.getuid?.() ?? 0;
  }
  const user = options.user ?? userName(owner) ?? os.userInfo().username;
  const command = [...(options.program ?? thisProgram()), 'agent', 'run', '--dir', dir];
  for (const edge of options.edges ?? []) command.push('--edge', edge);
  for (const pattern of options.allow ?? []) command.push('--allow', pattern);
  const pool = options.pool ?? {};
  if (pool.weight !== undefined) command.push('--weight', String(pool.weight));
  if (pool.priority !== undefined) command.push('--priority', String(pool.priority));
  if (pool.drainMs !== undefined) command.push('--drain-timeout', String(Math.round(pool.drainMs / 1000)));
  // systemctl stop and restart send SIGTERM, which drains the agent: systemd waits for the drain, and some more
  const stopSeconds = Math.round((pool.drainMs ?? 30_000) / 1000) + 15;
  const unit = `[Unit]
Description=edgehub agent (identity in ${dir})
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=${user}
ExecStart=${command.map(unitWord).join(' ')}
Restart=always
RestartSec=2
TimeoutStopSec=${stopSeconds}
# the agent renews its certificate into its identity folder; nothing else is written
NoNewPrivileges=yes
ProtectSystem=full
ReadWritePaths=${unitWord(dir)}

[Install]
WantedBy=multi-user.target
`;
  return { unit, user };
}

/**
 * Writes the unit to `file` (mode 0644).
 * @param {string} file
 * @param {string} unit
 */
export function writeUnit(file, unit) {
  try {
    writeFileSync(file, unit, { mode: 0o644 });
  } catch (err) {
    const code = /** @type {NodeJS.ErrnoException} */ (err).code;
    throw new EnrollError(
      `cannot write ${file} (${code ?? /** @type {Error} */ (err).message})${code === 'EACCES' ? ': run it as root (sudo), or give another path with --write <file>' : ''}`,
    );
  }
}
