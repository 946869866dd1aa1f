/**
 * The compiled tree `npm test` runs its test files from: every TypeScript file of the repository compiled once to
 * JavaScript by esbuild (the compiler tsx itself uses, with the same tsconfig.json), beside links to everything else.
 *
 * Why: each test file runs in a process of its own, and under tsx every module that process loads (the service's and
 * every package's) goes through tsx's loader hooks. Measured on the 2-core development machine: loading the API, the
 * workers and the edge cost 2.2 s of CPU per process under tsx and 1.1 s from the compiled tree; with ~110 test files
 * that is about two minutes of CPU per run. Compiling all of it takes about a second.
 *
 * The tree, in the test run's work directory:
 * - each `x.ts` becomes `x.js` (ES module, inline source map) and stays as a link `x.ts` to the original, so a test
 *   that starts a process the way the Procfile does (`node --import tsx edge/index.ts`, from this directory) runs the
 *   original sources;
 * - every other file is a link to the original, and so is a directory without TypeScript (agent/, docs/) and
 *   node_modules;
 * - package.json is a copy whose ava configuration runs the compiled test files without tsx;
 * - test-output/ (the artefacts people look at after a run, such as the console's screenshots) is the repository's.
 * Tests that read the repository's own files (its sources, its docs) find it through test/helpers/repo.ts, which
 * follows the links back.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';

/** Never copied or linked: the repository's own state and what the tests and the service write. */
const SKIPPED = new Set(['.git', '.data', 'tmp']);
/** Linked whole: read as they are, never compiled. */
const LINKED = new Set(['node_modules']);

const isTypeScript = (name: string) => name.endsWith('.ts') && !name.endsWith('.d.ts');

function containsTypeScript(dir: string): boolean {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory() ? containsTypeScript(path.join(dir, entry.name)) : isTypeScript(entry.name)) return true;
  }
  return false;
}

/** Mirrors `from` into `to`: real directories where there is TypeScript, links for the rest; returns the .ts files. */
function mirror(from: string, to: string, sources: string[]): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (SKIPPED.has(entry.name) || entry.name === 'package.json') continue;
    if (entry.isDirectory() && !LINKED.has(entry.name) && containsTypeScript(source)) {
      mirror(source, target, sources);
      continue;
    }
    symlinkSync(source, target);
    if (entry.isFile() && isTypeScript(entry.name)) sources.push(source);
  }
}

/** Builds the compiled tree of the repository at `root` in `to`; returns how many files were compiled. */
export function buildTestTree(root: string, to: string): number {
  const sources: string[] = [];
  mkdirSync(path.join(root, 'test-output'), { recursive: true });
  mirror(root, to, sources);
  buildSync({
    entryPoints: sources,
    outdir: to,
    outbase: root,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    tsconfig: path.join(root, 'tsconfig.json'),
    logLevel: 'error',
  });
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  pkg.ava = { ...pkg.ava, extensions: ['js'], files: (pkg.ava?.files ?? []).map((f: string) => f.replace(/\.ts$/, '.js')), nodeArguments: ['--enable-source-maps'] };
  writeFileSync(path.join(to, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  return sources.length;
}
