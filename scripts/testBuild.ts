/**
 * The compiled tree `npm test` runs its test files from (scripts/build.ts), in the test run's work directory, with a
 * package.json whose ava configuration runs the compiled test files without tsx, and the repository's test-output/
 * (the artefacts people look at after a run, such as the console's screenshots). Tests that read the repository's
 * own files (its sources, its docs) find it through test/helpers/repo.ts, which follows the links back.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildTree } from './build.js';

/** Builds the test tree of the repository at `root` in `to`; returns how many files were compiled. */
export function buildTestTree(root: string, to: string): number {
  mkdirSync(path.join(root, 'test-output'), { recursive: true });
  const compiled = buildTree(root, to, ['package.json']);
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  pkg.ava = {
    ...pkg.ava,
    extensions: ['js'],
    files: (pkg.ava?.files ?? []).map((f: string) => f.replace(/\.ts$/, '.js')),
    require: (pkg.ava?.require ?? []).map((f: string) => f.replace(/\.ts$/, '.js')),
    nodeArguments: ['--enable-source-maps'],
  };
  writeFileSync(path.join(to, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  return compiled;
}
