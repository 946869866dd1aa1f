/**
 * `npm run systemd-units -- [--user NAME] [--settings-file FILE] [--write DIR]`: the service's own processes as systemd
 * units, one per Procfile entry (`release` a oneshot that applies the migrations before the others start; `web`,
 * `worker`, `clock`, `edge` restarted whenever they end), all parts of `edgehub.target`. They run this checkout with
 * this node, as --user (default: the owner of the checkout), with the settings of --settings-file (default
 * /etc/edgehub/edgehub.env: DATABASE_URL, REDIS_URL, HUB_SECRET_KEY, HUB_ADMIN_TOKEN, PUBLIC_BASE_URL, ...).
 * (Not `--env-file`: Node 20 takes that option for itself wherever it appears on its command line.)
 * Without --write the units are printed, each after a `# FILE` line; with it they are written into DIR (usually
 * /etc/systemd/system). docs/production.md says what to do with them.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

/** One word of a systemd command line (`%` and `$` doubled; quoted when it has what would split it). */
const word = (w: string) => {
  const escaped = w.replace(/%/g, '%%').replace(/\$/g, '$$$$');
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped) ? escaped : `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
};

/** The Procfile's entries: name and command words (`node` becomes this node's absolute path). */
function procfile(root: string): { name: string; command: string[] }[] {
  return readFileSync(path.join(root, 'Procfile'), 'utf8')
    .split('\n')
    .map((line) => /^(\w+):\s*(.+)$/.exec(line.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ name: m[1], command: m[2].split(/\s+/).map((w, i) => (i === 0 && w === 'node' ? process.execPath : w)) }));
}

function userOf(file: string): string {
  const uid = statSync(file).uid;
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => Number(f[2]) === uid);
  return entry?.[0] ?? os.userInfo().username;
}

function units(options: { root: string; user: string; envFile: string }): Map<string, string> {
  const { root, user, envFile } = options;
  const out = new Map<string, string>();
  const entries = procfile(root);
  const names = entries.filter((e) => e.name !== 'release').map((e) => `edgehub-${e.name}.service`);
  out.set(
    'edgehub.target',
    `[Unit]
Description=edgehub (every process of the service)
Wants=${names.join(' ')}
After=network-online.target

[Install]
WantedBy=multi-user.target
`,
  );
  for (const entry of entries) {
    const release = entry.name === 'release';
    out.set(
      `edgehub-${entry.name}.service`,
      `[Unit]
Description=edgehub ${entry.name}${release ? ' (database migrations, before the other processes)' : ''}
PartOf=edgehub.target
Wants=network-online.target
After=network-online.target${release ? '' : ' edgehub-release.service\nRequires=edgehub-release.service'}

[Service]
Type=${release ? 'oneshot' : 'simple'}
${release ? 'RemainAfterExit=yes\n' : ''}User=${user}
WorkingDirectory=${word(root)}
EnvironmentFile=${word(envFile)}
ExecStart=${entry.command.map(word).join(' ')}
${release ? '' : 'Restart=always\nRestartSec=2\n# SIGTERM first: the edge writes its last counters, workers finish their jobs\nKillSignal=SIGTERM\nTimeoutStopSec=30\n'}${entry.name === 'edge' ? '# ports under 1024 (80 and 443) without root\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n' : ''}NoNewPrivileges=yes

[Install]
WantedBy=edgehub.target
`,
    );
  }
  return out;
}

if (process.argv[1]?.endsWith('systemd-units.ts')) {
  const { values } = parseArgs({ options: { user: { type: 'string' }, 'settings-file': { type: 'string' }, write: { type: 'string' } }, strict: true });
  const root = process.cwd();
  const all = units({ root, user: values.user ?? userOf(path.join(root, 'Procfile')), envFile: values['settings-file'] ?? '/etc/edgehub/edgehub.env' });
  for (const [name, text] of all) {
    if (values.write) {
      writeFileSync(path.join(values.write, name), text, { mode: 0o644 });
      console.log(`wrote ${path.join(values.write, name)}`);
    } else process.stdout.write(`# ${name}\n${text}\n`);
  }
  if (values.write) console.log('then: systemctl daemon-reload && systemctl enable --now edgehub.target');
}
