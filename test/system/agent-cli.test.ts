/**
 * The agent's command line as a user meets it before any service is involved: `edgehub --version`, a clear word
 * when there is no HOME for the default identity folder, and `edgehub agent install-service`, whose systemd unit is
 * checked by `systemd-analyze verify` where that runs, and parsed in any case.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';

const runFile = promisify(execFile);
const bin = path.resolve('agent/bin/edgehub.js');
const version = JSON.parse(readFileSync('agent/package.json', 'utf8')).version as string;

function edgehub(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8' });
}

/** A folder holding an identity's files (install-service looks only at their presence and owner). */
function identityDir(): string {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent cli '));
  writeFileSync(path.join(dir, 'agent.key'), 'key', { mode: 0o600 });
  writeFileSync(path.join(dir, 'agent.json'), '{}');
  return dir;
}

/** A unit file's sections, each a map of key to its values (in order). */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const sections: Record<string, Record<string, string[]>> = {};
  let current: Record<string, string[]> | undefined;
  for (const line of text.split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const section = /^\[(\w+)\]$/.exec(line);
    if (section) {
      current = sections[section[1]] = {};
      continue;
    }
    const pair = /^(\w+)=(.*)$/.exec(line);
    if (!pair || !current) throw new Error(`not a unit file line: ${line}`);
    (current[pair[1]] ??= []).push(pair[2]);
  }
  return sections;
}

for (const flag of ['--version', '-v']) {
  test(`edgehub ${flag} prints the agent's version`, (t) => {
    const run = edgehub([flag]);
    t.is(run.status, 0, run.stderr);
    t.is(run.stdout, `edgehub ${version}\n`);
  });
}

test('with no HOME, edgehub asks for --dir instead of writing its identity under the passwd home', (t) => {
  const env = { ...process.env };
  delete env.HOME;
  for (const args of [
    ['agent', 'run'],
    ['agent', 'enroll', 'eyJ.x.y'],
    ['share', '3000'],
  ]) {
    const run = edgehub(args, env);
    t.is(run.status, 1, run.stderr);
    t.is(
      run.stderr,
      'edgehub: HOME is not set, so there is no default folder for the agent identity: pass --dir <folder> (for a service, e.g. --dir /var/lib/edgehub/agent)\n',
    );
  }
});

test('edgehub agent install-service prints a systemd unit that runs the agent with its identity and edge options', async (t) => {
  const dir = identityDir();
  const run = edgehub(['agent', 'install-service', '--dir', dir, '--edge', 'edge.example.com:8443', '--allow', '*.internal:443']);
  t.is(run.status, 0, run.stderr);
  const unit = parseUnit(run.stdout);
  t.deepEqual(unit.Service.User, [os.userInfo().username], 'the owner of the identity key');
  t.deepEqual(unit.Service.Restart, ['always']);
  t.deepEqual(unit.Service.ExecStart, [`${process.execPath} ${bin} agent run --dir "${dir}" --edge edge.example.com:8443 --allow "*.internal:443"`]);
  t.deepEqual(unit.Service.ReadWritePaths, [`"${dir}"`]);
  t.deepEqual(unit.Install.WantedBy, ['multi-user.target']);
  t.deepEqual(unit.Unit.After, ['network-online.target']);
  t.deepEqual(unit.Service.TimeoutStopSec, ['45'], 'systemd waits for the drain (30 s) and some more');

  // the pool options go on the command line; systemd waits for the drain timeout given; out of range: one line
  const pooled = parseUnit(edgehub(['agent', 'install-service', '--dir', dir, '--weight', '3', '--priority', '1', '--drain-timeout', '60']).stdout);
  t.deepEqual(pooled.Service.ExecStart, [`${process.execPath} ${bin} agent run --dir "${dir}" --weight 3 --priority 1 --drain-timeout 60`]);
  t.deepEqual(pooled.Service.TimeoutStopSec, ['75']);
  const refused = edgehub(['agent', 'install-service', '--dir', dir, '--weight', '0']);
  t.is(refused.status, 2);
  t.is(refused.stderr, "edgehub: --weight '0': expected a whole number from 1 to 100\n");

  // --user overrides; --write writes the same unit to a file and says what to run next
  const file = path.join(dir, 'edgehub-agent.service');
  const written = edgehub(['agent', 'install-service', '--dir', dir, '--user', 'nobody', '--write', file]);
  t.is(written.status, 0, written.stderr);
  t.is(written.stdout, `wrote ${file} (runs as nobody); now: systemctl daemon-reload && systemctl enable --now edgehub-agent\n`);
  t.deepEqual(parseUnit(readFileSync(file, 'utf8')).Service.User, ['nobody']);

  // systemd's own check, where systemd-analyze runs (it resolves the ExecStart binary and the user)
  const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
  if (analyze.status === 0) {
    await t.notThrowsAsync(runFile('systemd-analyze', ['verify', file], { cwd: dir }));
  } else t.log('systemd-analyze does not run here: the unit was parsed only');
});

test('edgehub agent install-service without an identity says to enroll first', (t) => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-cli-'));
  const run = edgehub(['agent', 'install-service', '--dir', dir]);
  t.is(run.status, 1);
  t.is(run.stderr, `edgehub: no agent identity in ${dir}: run edgehub agent enroll <jwt> --dir ${dir} first (as the user the service is to run as)\n`);
});
