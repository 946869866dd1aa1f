/**
 * `npm run systemd-units`: the service's processes as systemd units, one per Procfile entry, checked by
 * `systemd-analyze verify` where it runs and parsed in any case.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';

const runFile = promisify(execFile);

function section(text: string, name: string): Record<string, string | undefined> {
  const body = text.split(/^\[/m).find((s) => s.startsWith(`${name}]`)) ?? '';
  return Object.fromEntries(
    body
      .split('\n')
      .slice(1)
      .filter((l) => /^\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

test('npm run systemd-units writes a unit per Procfile entry and a target; systemd accepts them', async (t) => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'units-'));
  const run = spawnSync(
    'npm',
    ['run', '-s', 'systemd-units', '--', '--write', dir, '--user', os.userInfo().username, '--settings-file', '/etc/edgehub/edgehub.env'],
    { encoding: 'utf8' },
  );
  t.is(run.status, 0, run.stderr);
  t.deepEqual(readdirSync(dir).sort(), [
    'edgehub-clock.service',
    'edgehub-edge.service',
    'edgehub-release.service',
    'edgehub-web.service',
    'edgehub-worker.service',
    'edgehub.target',
  ]);
  const procfile = Object.fromEntries(
    readFileSync('Procfile', 'utf8')
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]),
  );
  for (const [name, command] of Object.entries(procfile)) {
    const unit = readFileSync(path.join(dir, `edgehub-${name}.service`), 'utf8');
    const service = section(unit, 'Service');
    t.is(service.ExecStart, command.replace(/^node /, `${process.execPath} `), name);
    t.is(service.User, os.userInfo().username);
    t.is(service.WorkingDirectory, process.cwd());
    t.is(service.EnvironmentFile, '/etc/edgehub/edgehub.env');
    if (name === 'release') {
      t.is(service.Type, 'oneshot');
      t.is(service.Restart, undefined);
    } else {
      t.is(service.Restart, 'always', name);
      t.is(section(unit, 'Unit').Requires, 'edgehub-release.service', `${name} starts after the migrations`);
    }
    t.is(section(unit, 'Install').WantedBy, 'edgehub.target');
  }
  t.regex(
    section(readFileSync(path.join(dir, 'edgehub.target'), 'utf8'), 'Unit').Wants ?? '',
    /^edgehub-web\.service edgehub-worker\.service edgehub-clock\.service edgehub-edge\.service$/,
  );
  if (spawnSync('systemd-analyze', ['--version']).status === 0) {
    const files = readdirSync(dir).map((f) => path.join(dir, f));
    await t.notThrowsAsync(runFile('systemd-analyze', ['verify', ...files], { cwd: dir }));
  } else t.log('systemd-analyze does not run here: the units were parsed only');
});
