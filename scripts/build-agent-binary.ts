/**
 * `npm run build:agent-binary`: the agent as one executable for machines without Node (Node's single executable
 * applications). The agent package (agent/, Node's built-ins only) is bundled into one CommonJS file by esbuild,
 * turned into a preparation blob by `node --experimental-sea-config`, and injected into a copy of this Node binary
 * by postject (its API, in this process: see `injectBlob`). The result, agent/dist/edgehub-linux-x64 (the platform and architecture of the Node that ran this),
 * is what the API serves at /downloads/edgehub-linux-x64, as long as agent/ has not changed since (the digest of its
 * files is written beside it).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { AGENT_BINARY, AGENT_BINARY_DIGEST, AGENT_DIR, agentDigest } from '../shared/downloads.js';

type Inject = (file: string, resource: string, data: Buffer, options: { sentinelFuse: string }) => Promise<void>;

/**
 * LIEF (compiled into postject) rewrites the ELF's PT_NOTE segment as new NOTE sections and names them `.note` and
 * `.note.<type>`, names it never adds to the section name table; it says so once per section on stderr, through
 * console.warn ("warning: Can't find string offset for section name '.note.100'", nine times for Node's binary).
 * The sections are left nameless (readelf shows them with an empty name), which nothing reads by name: the
 * executable runs. postject offers no way to quiet its LIEF logger, so while it injects, exactly that message is
 * dropped; any other warning passes.
 */
const LIEF_NOTE_NAMES = /^warning: Can't find string offset for section name '\.note(\.\d+)?'$/;

async function injectBlob(file: string, blob: string): Promise<void> {
  const { inject } = createRequire(import.meta.url)('postject') as { inject: Inject };
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (args.length === 1 && typeof args[0] === 'string' && LIEF_NOTE_NAMES.test(args[0])) return;
    warn(...args);
  };
  try {
    await inject(file, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2' });
  } finally {
    console.warn = warn;
  }
}

const started = Date.now();
// the agent files as they are now: what the executable is built from, and what the service checks before serving it
const digest = agentDigest();
const work = mkdtempSync(path.join(os.tmpdir(), 'edgehub-sea-'));
try {
  const entry = path.join(work, 'entry.mjs');
  // SEA's argv is [binary, binary, ...args], as node's is [node, script, ...args]
  writeFileSync(
    entry,
    `import { main } from ${JSON.stringify(path.join(AGENT_DIR, 'lib', 'cli.js'))};\nmain(process.argv.slice(2)).then((code) => { process.exitCode = code; });\n`,
  );
  const bundle = path.join(work, 'edgehub.cjs');
  await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: bundle, logLevel: 'warning' });
  const blob = path.join(work, 'sea-prep.blob');
  const seaConfig = path.join(work, 'sea-config.json');
  writeFileSync(seaConfig, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true }));
  execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { stdio: 'inherit' });
  mkdirSync(path.dirname(AGENT_BINARY), { recursive: true });
  const aside = `${AGENT_BINARY}.${process.pid}`;
  copyFileSync(process.execPath, aside);
  chmodSync(aside, 0o755);
  await injectBlob(aside, blob);
  rmSync(AGENT_BINARY, { force: true });
  execFileSync('mv', [aside, AGENT_BINARY]);
  writeFileSync(AGENT_BINARY_DIGEST, `${digest}\n`);
  console.log(
    `built ${AGENT_BINARY} (${(statSync(AGENT_BINARY).size / 1e6).toFixed(1)} MB, ${process.platform}-${process.arch}) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
