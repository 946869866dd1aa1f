/**
 * The agent as a user on another machine gets it: the service serves its npm package, and that package installs and
 * runs where there is Node and nothing else. The other machine is a network namespace (it reaches the service only
 * through a forwarder on its own loopback, the edge on the host's side of its veth) with a private mount namespace
 * in which /work (this repository, its node_modules, everything of the project) is an empty tmpfs; npm's registry is
 * an unreachable loopback port and its cache a fresh folder, so nothing but the service's URL can provide the
 * package. The single executable is built once here (`npm run build:agent-binary`, a few seconds: the time is in
 * the test's log) and runs with an empty environment (`env -i`), where no `node` is on any PATH.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { resetConfig } from '../../shared/config.js';
import { AGENT_BINARY, AGENT_BINARY_DIGEST } from '../../shared/downloads.js';
import { startPrivateTarget } from '../helpers/agents.js';
import { edgeRequest, publicFrontendCertificate, startTestEdge } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const runFile = promisify(execFile);
const stack = useStack(test, { env: { HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await edge?.stop(1000);
  // removed once the edge has stopped, so that its connections into them could end
  for (const n of namespaces) await n.remove().catch(() => undefined);
  delete process.env.HUB_EDGE_AGENT_ADDRESSES;
  resetConfig();
});
const cleanups: (() => Promise<unknown>)[] = [];
const namespaces: PrivateNetwork[] = [];
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-package-'));
let edge: Edge;
let hub: HubFixture;
let ns: PrivateNetwork;
let apiPort: string;

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0' });
  hub = await stack.hub();
  ns = await privateNetwork();
  namespaces.push(ns);
  await startPrivateTarget(ns, 'elsewhere');
  await publicFrontendCertificate(stack.databaseUrl);
  apiPort = new URL(stack.baseUrl).port;
  // inside the namespace, 127.0.0.1:<api port> is the service (as PUBLIC_BASE_URL says); agents dial the edge on the veth
  const forwarder = ns.spawn(process.execPath, [
    '-e',
    `const net = require('net'); net.createServer((s) => { const u = net.connect(${apiPort}, '${ns.hostIp}'); s.pipe(u).pipe(s); u.on('error', () => s.destroy()); s.on('error', () => u.destroy()); }).listen(${apiPort}, '127.0.0.1', () => console.log('ready'));`,
  ]);
  await new Promise((resolve) => forwarder.stdout!.once('data', resolve));
  process.env.HUB_EDGE_AGENT_ADDRESSES = `${ns.hostIp}:${edge.httpsPort}`;
  resetConfig();
});

/** A command on "the other machine": in the namespace, /work hidden, the environment exactly `env`. */
function elsewhere(command: string, args: string[], env: Record<string, string>) {
  const child = ns.spawn('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs none /work && cd "$HOME" && exec "$@"', 'sh', command, ...args], { env });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => child.kill('SIGKILL'));
  return { child, exited, out: () => out, err: () => err };
}

/** `edgehub share` (however installed) publishes the namespace's target; it answers through the edge; Ctrl-C deletes it. */
async function shares(t: import('ava').ExecutionContext, edgehub: string, env: Record<string, string>, dir: string) {
  const run = elsewhere(edgehub, ['share', 'http://localhost:8080', '--dir', dir], {
    ...env,
    EDGEHUB_URL: `http://127.0.0.1:${apiPort}`,
    EDGEHUB_API_KEY: hub.token,
  });
  const line = await waitFor(async () => /share (\S+): (\S+) -> http:\/\/localhost:8080\//.exec(run.out()), { what: 'the share line' }).catch((e) => {
    throw new Error(`${(e as Error).message}; stdout: ${run.out()}; stderr: ${run.err()}`);
  });
  const [, zId, endpoint] = line;
  const host = new URL(endpoint).hostname;
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text === 'elsewhere', {
    what: `the share answering (${run.out()} ${run.err()})`,
  });
  run.child.kill('SIGINT');
  t.is(await run.exited, 0, run.err());
  t.regex(run.out(), new RegExp(`share ${zId} deleted`));
}

test.serial('GET /downloads/edgehub-agent.tgz: the npm pack of agent/ (no dependencies, under 200 KB), without authentication', async (t) => {
  const res = await fetch(`${stack.baseUrl}/downloads/edgehub-agent.tgz`);
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'application/gzip');
  const tgz = Buffer.from(await res.arrayBuffer());
  t.true(tgz.length > 1000 && tgz.length < 200 * 1024, `${tgz.length} bytes`);
  const file = path.join(work, 'served.tgz');
  await import('node:fs/promises').then((fs) => fs.writeFile(file, tgz));
  const listing = (await runFile('tar', ['-tzf', file])).stdout.split('\n');
  t.true(listing.includes('package/bin/edgehub.js'));
  t.true(listing.includes('package/lib/protocol.js'));
  const pkg = JSON.parse((await runFile('tar', ['-xzOf', file, 'package/package.json'])).stdout);
  t.is(pkg.name, 'edgehub-agent');
  t.is(pkg.bin.edgehub, 'bin/edgehub.js');
  t.deepEqual(pkg.dependencies ?? {}, {}, 'Node built-ins only');
  // a second request is the same packed file
  const again = Buffer.from(await (await fetch(`${stack.baseUrl}/downloads/edgehub-agent.tgz`)).arrayBuffer());
  t.true(again.equals(tgz));
});

test.serial('npm install -g from the service URL on a machine with Node only (no repository, no registry), then edgehub share from there', async (t) => {
  const home = mkdtempSync(path.join(work, 'home-'));
  const prefix = path.join(home, 'prefix');
  const env = { PATH: '/usr/bin:/bin:/usr/sbin:/sbin', HOME: home };
  const install = elsewhere(
    'npm',
    [
      'install',
      '-g',
      '--prefix',
      prefix,
      '--registry',
      'http://127.0.0.1:9/',
      '--cache',
      path.join(home, 'npm-cache'),
      '--no-audit',
      '--no-fund',
      '--no-update-notifier',
      `http://127.0.0.1:${apiPort}/downloads/edgehub-agent.tgz`,
    ],
    env,
  );
  t.is(await install.exited, 0, `npm install: ${install.out()} ${install.err()}`);
  const edgehub = path.join(prefix, 'bin', 'edgehub');
  t.truthy(statSync(edgehub));
  // the repository is out of sight there: /work is empty
  const looks = elsewhere('ls', ['-A', '/work'], env);
  t.is(await looks.exited, 0);
  t.is(looks.out().trim(), '');
  await shares(t, edgehub, env, path.join(home, '.edgehub', 'agent'));
});

test.serial('the single executable: built by npm run build:agent-binary, served, run with env -i (no node anywhere on PATH)', async (t) => {
  const started = Date.now();
  const built = await runFile('npm', ['run', 'build:agent-binary'], { cwd: path.resolve('.'), timeout: 300_000 });
  t.notRegex(built.stderr, /warning: Can't find string offset/, "LIEF's warnings about the note sections it leaves nameless are dropped");
  t.log(`npm run build:agent-binary took ${((Date.now() - started) / 1000).toFixed(1)} s; ${(statSync(AGENT_BINARY).size / 1e6).toFixed(1)} MB`);
  const res = await fetch(`${stack.baseUrl}/downloads/edgehub-linux-x64`);
  t.is(res.status, 200);
  const served = path.join(work, 'edgehub-linux-x64');
  await import('node:fs/promises').then(async (fs) => {
    await fs.writeFile(served, Buffer.from(await res.arrayBuffer()), { mode: 0o755 });
  });
  t.true(readFileSync(served).equals(readFileSync(AGENT_BINARY)));
  // an executable built from other agent files (a service upgraded without a new build) is not served
  const digest = readFileSync(AGENT_BINARY_DIGEST, 'utf8');
  writeFileSync(AGENT_BINARY_DIGEST, '0000000000000000\n');
  try {
    const stale = await fetch(`${stack.baseUrl}/downloads/edgehub-linux-x64`);
    t.is(stale.status, 404);
    t.regex(((await stale.json()) as { message: string }).message, /built from another version of the agent: build it again \(npm run build:agent-binary\)/);
  } finally {
    writeFileSync(AGENT_BINARY_DIGEST, digest);
  }
  t.is((await fetch(`${stack.baseUrl}/downloads/edgehub-linux-x64`, { method: 'HEAD' })).status, 200, 'served again once it matches');
  const help = await runFile('env', ['-i', served, '--help']);
  t.regex(help.stdout, /edgehub share <target>/);
  t.is((await runFile('env', ['-i', served, '--version'])).stdout, `edgehub ${JSON.parse(readFileSync('agent/package.json', 'utf8')).version}\n`);
  const home = mkdtempSync(path.join(work, 'sea-home-'));
  // env -i inside the namespace: no PATH, no node; the executable serves the share
  const run = elsewhere(
    'env',
    [
      '-i',
      `HOME=${home}`,
      `EDGEHUB_URL=http://127.0.0.1:${apiPort}`,
      `EDGEHUB_API_KEY=${hub.token}`,
      served,
      'share',
      'http://localhost:8080',
      '--dir',
      path.join(home, 'agent'),
    ],
    { HOME: home, PATH: '/usr/bin:/bin:/usr/sbin:/sbin' },
  );
  const line = await waitFor(async () => /share (\S+): (\S+) ->/.exec(run.out()), { what: 'the share line' }).catch((e) => {
    throw new Error(`${(e as Error).message}; stdout: ${run.out()}; stderr: ${run.err()}`);
  });
  const host = new URL(line[2]).hostname;
  await waitFor(async () => (await edgeRequest(edge.httpPort!, host, { path: '/whoami' })).text === 'elsewhere', {
    what: 'the share answering through the executable',
  });
  run.child.kill('SIGINT');
  t.is(await run.exited, 0, run.err());
  t.regex(run.out(), /deleted/);
});
