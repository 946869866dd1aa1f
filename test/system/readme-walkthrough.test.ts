/**
 * The README's walk-through runs top to bottom against a real stack, with only what the README says a
 * user has: BASE, HUB_DATA_DIR (holding the admin token `npm start` stores there) and PORT, the service started
 * with HUB_DNS_SERVERS pointing at `npm run dev:dns` serving `$HUB_DATA_DIR/dns`. A failing block fails the test.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { ensureCommands } from '../../scripts/services/index.js';
import { startDevDns, type DevDns } from '../../scripts/dev-dns.js';
import pg from 'pg';
import type { Edge } from '../../edge/server.js';
import { startTestEdge } from '../helpers/edge.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { runWalkthrough, walkthroughBlocks } from '../helpers/walkthrough.js';
import { repoRoot } from '../helpers/repo.js';

const root = repoRoot;
// the walk-through lives in docs/getting-started.md; the README links to it
const readme = readFileSync(path.join(root, 'docs', 'getting-started.md'), 'utf8');

/**
 * Features of the test stack that blocks may require (`<!-- walkthrough:requires edge -->`): the edge runs beside
 * the stack, and the standard frontend `public` points at its port (as HUB_PUBLIC_FRONTEND_TEMPLATE would).
 */
const FEATURES: string[] = ['edge'];

let stack: Stack | undefined;
let edge: Edge | undefined;
let dns: DevDns | undefined;
let dataDir: string;

test.before(async () => {
  ensureCommands([
    { command: 'jq', pkg: 'jq', hint: 'The README walk-through reads answers with jq: `apt-get install jq` or `brew install jq`.' },
    { command: 'curl', pkg: 'curl', hint: 'Install curl.' },
    { command: 'openssl', pkg: 'openssl', hint: 'Install openssl.' },
  ]);
  dataDir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'walkthrough-'));
  chmodSync(dataDir, 0o755);
  mkdirSync(path.join(dataDir, 'dns'));
  dns = await startDevDns({ dir: path.join(dataDir, 'dns'), listen: '127.0.0.1:0' });
  stack = await startStack({
    env: { HUB_DATA_DIR: dataDir, HUB_DNS_SERVERS: dns.server, HUB_DNS_CHECK_INTERVAL_MS: '200', HUB_EDGE_FLUSH_MS: '500' },
  });
  edge = await startTestEdge({ httpsPort: 0 });
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  await db.query(`UPDATE frontends SET url_template = $1 WHERE hub_id IS NULL AND public_name = 'public'`, [`http://{token}.share.localhost:${edge.httpPort}`]);
  await db.end();
  // what `npm start` leaves for the user: the admin token in $HUB_DATA_DIR/admin-token
  writeFileSync(path.join(dataDir, 'admin-token'), stack.adminToken + '\n', { mode: 0o600 });
});

test.after.always(async () => {
  await edge?.stop(1000);
  await stack?.stop();
  await dns?.close();
});

test('the README walk-through runs top to bottom under bash -euo pipefail', async (t) => {
  t.timeout(6 * 60_000);
  const blocks = walkthroughBlocks(readme);
  t.true(blocks.length >= 8, `found only ${blocks.length} walk-through blocks`);
  const base = stack!.baseUrl;
  const run = await runWalkthrough(blocks, {
    env: { BASE: base, HUB_DATA_DIR: dataDir, PORT: new URL(base).port },
    features: FEATURES,
    cwd: dataDir,
    timeoutMs: 5 * 60_000,
  });
  for (const b of run.skipped) t.log(`skipped the block at docs/getting-started.md line ${b.line} (requires ${b.requires.join(', ')})`);
  if (run.code !== 0) {
    t.fail(`the walk-through stopped in the block at docs/getting-started.md line ${run.failedAt} (exit ${run.code}); output:\n${run.output.slice(-6000)}`);
    return;
  }
  t.pass();
  // it cleaned up after itself: the DNS records it published for the custom frontend are withdrawn
  t.deepEqual(readdirSync(path.join(dataDir, 'dns')), []);
});

test('the runner stops at the first failing block and names its line', async (t) => {
  const markdown = [
    '```sh',
    'echo outside',
    '```',
    '<!-- walkthrough:start -->',
    '```sh',
    'A=1',
    '```',
    '```json',
    '{"not": "run"}',
    '```',
    '<!-- walkthrough:requires edge -->',
    '```sh',
    'echo needs-edge',
    '```',
    '```sh',
    'echo "a is $A"',
    'curl -fsS http://127.0.0.1:9/ >/dev/null',
    '```',
    '```sh',
    'echo never',
    '```',
    '<!-- walkthrough:end -->',
  ].join('\n');
  const blocks = walkthroughBlocks(markdown);
  t.deepEqual(
    blocks.map((b) => [b.line, b.requires]),
    [
      [5, []],
      [12, ['edge']],
      [15, []],
      [19, []],
    ],
  );
  const run = await runWalkthrough(blocks, { env: {}, timeoutMs: 60_000 });
  t.not(run.code, 0);
  t.is(run.failedAt, 15);
  t.regex(run.output, /a is 1/);
  t.notRegex(run.output, /never|needs-edge|outside/);
  t.deepEqual(
    run.skipped.map((b) => b.line),
    [12],
  );

  const unset = await runWalkthrough(walkthroughBlocks('<!-- walkthrough:start -->\n```sh\necho "$NOT_SET"\n```\n<!-- walkthrough:end -->'), { env: {} });
  t.not(unset.code, 0, 'an unset variable fails (set -u)');
  const piped = await runWalkthrough(walkthroughBlocks('<!-- walkthrough:start -->\n```sh\nfalse | cat\n```\n<!-- walkthrough:end -->'), { env: {} });
  t.not(piped.code, 0, 'a failure inside a pipeline fails (pipefail)');

  // a run that fails while a background process it started still holds its output (the walk-through's backend
  // before its `kill`) ends when bash does, and takes the background process with it
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'walkthrough-runner-'));
  const started = Date.now();
  const orphan = await runWalkthrough(
    walkthroughBlocks('<!-- walkthrough:start -->\n```sh\nsleep 600 &\necho $! > background.pid\nfalse\n```\n<!-- walkthrough:end -->'),
    { env: {}, cwd: dir, timeoutMs: 60_000 },
  );
  t.not(orphan.code, 0);
  t.true(Date.now() - started < 10_000, `the failed run took ${Date.now() - started} ms to return`);
  const pid = Number(readFileSync(path.join(dir, 'background.pid'), 'utf8'));
  t.true(pid > 0);
  const alive = () => {
    try {
      // a zombie waiting to be reaped counts as gone
      return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + 5000;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.false(alive(), `the background process ${pid} outlived the run`);
});
