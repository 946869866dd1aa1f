/**
 * `npm test`: boots one embedded PostgreSQL (with a migrated template database) and one redis-server for the whole
 * run, compiles the repository once into a tree the test files run from (scripts/testBuild.ts: no TypeScript loader
 * in each test process), runs ava there against them, and stops them. Each test file clones the template into a
 * database of its own and uses its own queue prefix (test/helpers/stack.ts), so files run in parallel without seeing
 * each other. Arguments are passed to ava (e.g. `npm test -- test/api/auth/auth.test.ts`; a `.test.ts` path is run
 * as its compiled `.test.js`).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Sequelize } from 'sequelize';
import { migrate } from '../domain/migrate.js';
import { errorLines, scanRun } from '../test/helpers/logScan.js';
import { ensureCommands, REDIS_SERVER, startPostgres, startRedis } from './services/index.js';
import { setting } from '../shared/settings.js';
import { buildTestTree } from './testBuild.js';
import { killOrphans, watchAva } from './testWatchdog.js';

const TEMPLATE = 'edgehub_template';
const work = mkdtempSync(path.join(os.tmpdir(), 'edgehub-test-'));
chmodSync(work, 0o755); // the postgres user must reach the data dir

// what the tests need beyond npm packages: redis-server, Pebble (an ACME test CA) for the ACME frontend test, nginx
// (the reference proxy of the edge's differential fuzz), iproute2 (network namespaces of the agent and IPsec tests)
// strongSwan (charon with ESP in user space, swanctl) for the IPsec tests, and chromium for the console tests
ensureCommands([
  { command: 'chromium', pkg: 'chromium', hint: 'Install it: `sudo apt-get install chromium` (the web console tests drive it).' },
  { command: 'ip', pkg: 'iproute2', hint: 'Install it: `sudo apt-get install iproute2`.' },
  {
    command: 'swanctl',
    pkg: 'strongswan-swanctl strongswan-charon libcharon-extra-plugins',
    hint: 'Install it: `sudo apt-get install strongswan-swanctl strongswan-charon libcharon-extra-plugins`.',
  },
  REDIS_SERVER,
  { command: 'pebble', pkg: 'pebble', hint: 'Install it: `sudo apt-get install pebble`.' },
  { command: 'nginx', pkg: 'nginx', hint: 'Install it: `sudo apt-get install nginx`.' },
]);

const started = Date.now();
// a password of the run's own, as npm start's (no test may rely on a fixed one)
const pg = await startPostgres(path.join(work, 'postgres'), { persistent: false, database: TEMPLATE, password: randomBytes(18).toString('base64url') });
const redis = await startRedis(undefined);
let code = 1;
try {
  const migrator = new Sequelize(pg.url(TEMPLATE), { logging: false });
  await migrate(migrator);
  await migrator.close();
  console.log(`test services ready in ${((Date.now() - started) / 1000).toFixed(1)} s (PostgreSQL + redis-server on loopback)`);

  const built = Date.now();
  const tree = path.join(work, 'tree');
  const compiled = buildTestTree(process.cwd(), tree);
  console.log(`compiled ${compiled} TypeScript files for the test processes in ${((Date.now() - built) / 1000).toFixed(1)} s`);
  const args = process.argv.slice(2).map((a) => (a.endsWith('.test.ts') ? a.replace(/\.ts$/, '.js') : a));
  // a whole run has two phases: the browser tests run after the others, alone. Chromium cancels its requests in flight
  // (net::ERR_NETWORK_CHANGED) whenever an address of the host comes or goes, which the agent and IPsec tests do as
  // they make and remove their network namespaces: run beside them, a console page lost a module half loaded.
  const phases = args.some((a) => !a.startsWith('-')) ? [args] : browserLast(args);
  let passed = 0;
  let failed = 0;
  code = 0;
  for (const phase of phases) {
    const run = await runAva(tree, phase);
    passed += run.passed;
    failed += run.failed;
    code = code || run.code;
  }
  const scan = scanRun(path.join(work, 'logs'));
  console.log(`log scan: ${scan.secrets} secrets looked for in ${scan.files} log files (${(scan.bytes / 1e6).toFixed(1)} MB)`);
  if (scan.leaks.length) {
    for (const l of scan.leaks.slice(0, 20)) console.log(`  ✘ a ${l.kind} (${l.preview}) is in ${path.basename(l.file)} line ${l.line}`);
    console.log(`✘ log scan: ${scan.leaks.length} secret(s) found in the logs`);
    failed++;
    code = code || 1;
  }
  // a failed run says what its processes logged as errors (the logs go with the work directory)
  if (code !== 0) {
    const errors = errorLines(path.join(work, 'logs'));
    if (errors.length) console.log(`\nerror lines logged during the run (distinct, first ${errors.length}):\n${errors.map((l) => `  ${l}`).join('\n')}`);
  }
  if (code !== 0 && failed === 0) failed = 1;
  console.log(`\n${passed} passed, ${failed} failed`);
  if (passed === 0 && code === 0) code = 1;
} finally {
  await redis.stop();
  await pg.stop().catch(() => undefined);
  // TEST_KEEP_WORK=1 keeps the logs and data of a run to read after it
  if (setting('TEST_KEEP_WORK')) console.log(`work directory kept: ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
process.exit(code);

/** The test files (compiled names), those that drive chromium last: two phases of ava's arguments. */
function browserLast(flags: string[]): string[][] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.test.ts')) files.push(full);
    }
  };
  walk('test');
  const browser = (file: string) => /from 'playwright-core'|helpers\/console\.js'/.test(readFileSync(file, 'utf8'));
  const compiled = (file: string) => file.replace(/\.ts$/, '.js');
  const first = files
    .filter((f) => !browser(f))
    .map(compiled)
    .sort();
  const last = files.filter(browser).map(compiled).sort();
  return [
    [...flags, ...first],
    [...flags, ...last],
  ].filter((phase) => phase.length > flags.length);
}

/** One ava run in the compiled tree: its exit code and its counts, from its own summary. */
async function runAva(tree: string, args: string[]): Promise<{ code: number; passed: number; failed: number }> {
  const ava = spawn(process.execPath, [path.join('node_modules', 'ava', 'entrypoints', 'cli.mjs'), ...args], {
    cwd: tree,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: setting('LOG_LEVEL') ?? 'silent',
      TEST_POSTGRES_URL: pg.url('postgres'),
      TEST_TEMPLATE_DB: TEMPLATE,
      TEST_REDIS_URL: redis.url,
      TEST_WORK_DIR: work,
      // every process of the run also logs to a file here; the run's secrets are looked for in them afterwards
      HUB_LOG_DIR: path.join(work, 'logs'),
    },
  });
  // a test process that outlives its file, or a run with no result for minutes, is killed and named (testWatchdog.ts)
  const watchdog = watchAva(ava.pid ?? 0, {
    workDir: work,
    logDir: path.join(work, 'logs'),
    afterDoneMs: Number(setting('TEST_WATCHDOG_AFTER_DONE_S')) * 1000,
    stallMs: Number(setting('TEST_WATCHDOG_STALL_S')) * 1000,
  });
  let tail = '';
  const marks = { '✔': 0, '✘': 0 };
  let partial = '';
  ava.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    tail = (tail + chunk.toString()).slice(-20_000);
    const text = partial + chunk.toString();
    const complete = text.split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete) {
      const mark = line.trimStart().slice(0, 1);
      if (mark === '✔' || mark === '✘') {
        marks[mark]++;
        watchdog.activity();
      }
    }
  });
  // ava exits as soon as it printed its summary; one that does not is held by a process left behind (testWatchdog.ts
  // killOrphans), and then by nothing we can name: it is stopped, its results are printed already
  let summarised: NodeJS.Timeout | undefined;
  let orphansKilled = 0;
  const onSummary = (chunk: Buffer) => {
    if (summarised || !/^\s*\d+ (tests?|hooks?) (passed|failed)/m.test(chunk.toString())) return;
    summarised = setTimeout(() => {
      orphansKilled = killOrphans(work, 'ava printed its summary 30 s ago and has not exited', ava.pid);
      summarised = setTimeout(() => ava.kill('SIGKILL'), 30_000);
    }, 30_000);
  };
  ava.stdout.on('data', onSummary);
  const exit = await new Promise<number>((resolve) => ava.once('exit', (c) => resolve(c ?? 1)));
  clearTimeout(summarised);
  watchdog.stop();
  // and a process a test left behind is a failure of the run even when ava was not held by it
  orphansKilled += killOrphans(work, 'after the run');
  // a closing line any CI can read, from ava's own summary
  const summary = (re: RegExp) => Number(re.exec(tail)?.[1] ?? 0);
  const failed = Math.max(summary(/(\d+) tests? failed/), marks['✘']) + watchdog.killed + orphansKilled;
  return { code: exit || (watchdog.killed || orphansKilled ? 1 : 0), passed: Math.max(summary(/(\d+) tests? passed/), marks['✔']), failed };
}
