/**
 * The repository compiled to JavaScript in a tree of its own, which `npm start` runs the service's processes from
 * and `npm test` its test files: every TypeScript file compiled once by esbuild (the compiler tsx itself uses, with
 * the same tsconfig.json), beside links to everything else.
 *
 * Why not tsx in each process: under tsx every module a process loads (the service's and every package's) goes
 * through its loader hooks, and the code it compiles wraps every named function it creates to keep its name.
 * Measured on the 2-core development machine: loading the API, the workers and the edge costs 2.2 s of CPU under tsx
 * and 1.1 s from the compiled tree; the edge spent 89 µs of CPU per proxied request under tsx against 64 µs compiled
 * (bench:edge, the same run). Compiling all of it takes about a second.
 *
 * The tree:
 * - each `x.ts` becomes `x.js` (ES module, inline source map) and stays as a link `x.ts` to the original, so a
 *   process started from the tree the way the Procfile does (`node --import tsx edge/ipsec/relay.ts`) runs the
 *   original sources;
 * - every other file is a link to the original, and so is a directory without TypeScript (agent/, docs/) and
 *   node_modules; the repository's state (.git, .data) and the tree itself are left out.
 */
import { mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';

/** Never linked or compiled: the repository's own state and what the service writes. */
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

/** Mirrors `from` into `to`: real directories where there is TypeScript, links for the rest; collects the sources. */
function mirror(from: string, to: string, leaveOut: Set<string>, sources: string[]): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (SKIPPED.has(entry.name) || leaveOut.has(source)) continue;
    if (entry.isDirectory() && !LINKED.has(entry.name) && containsTypeScript(source)) {
      mirror(source, target, leaveOut, sources);
      continue;
    }
    symlinkSync(source, target);
    if (entry.isFile() && isTypeScript(entry.name)) sources.push(source);
  }
}

/**
 * Builds the compiled tree of the repository at `root` in `to` (emptied first); `leaveOut` names files of the root the
 * caller writes itself. Returns how many files were compiled.
 */
export function buildTree(root: string, to: string, leaveOut: string[] = []): number {
  const from = path.resolve(root);
  const out = path.resolve(to);
  rmSync(out, { recursive: true, force: true });
  const sources: string[] = [];
  mirror(from, out, new Set([out, ...leaveOut.map((f) => path.resolve(from, f))]), sources);
  buildSync({
    entryPoints: sources,
    outdir: out,
    outbase: from,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    tsconfig: path.join(from, 'tsconfig.json'),
    logLevel: 'error',
  });
  return sources.length;
}
