/**
 * No dead exports: a name a source file exports is used somewhere, in its own file or another (the service's
 * sources, the agent package, the tests, the benchmarks). Comments do not count as a use. A name nothing uses is
 * code nobody runs: delete it rather than keep it "for tests" or "for later".
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { repoRoot } from '../helpers/repo.js';

/** Where exports are looked for. */
const SOURCES = ['api', 'edge', 'shared', 'domain', 'workers', 'scripts', 'agent'];
/** Where a use counts: the sources, and what runs them from outside. */
const USERS = [...SOURCES, 'test', 'bench'];
/** Exported for a reader outside the repository (none today): `file name`, each with why it stays. */
const ENTRY_POINTS: Record<string, string> = {};

function* files(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'dist') continue;
    if (statSync(full).isDirectory()) yield* files(full);
    else if (/\.(ts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) yield full;
  }
}

/** A file's code without its comments (block comments, and line comments that start a line). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

const EXPORT =
  /^export\s+(?:default\s+)?(?:declare\s+)?(?:async\s+)?(?:const|let|function\*?|class|abstract\s+class|type|interface|enum)\s+([A-Za-z_$][\w$]*)/gm;

/** How many times each identifier appears in the code of every file that may use an export. */
function identifierCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const top of USERS) {
    for (const file of files(path.join(repoRoot, top))) {
      for (const [word] of code(readFileSync(file, 'utf8')).matchAll(/[A-Za-z_$][\w$]*/g)) counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  return counts;
}

/** Exported names that appear nowhere but in their own declaration, as `file name`. */
function deadExports(): string[] {
  const counts = identifierCounts();
  const dead: string[] = [];
  for (const top of SOURCES) {
    for (const file of files(path.join(repoRoot, top))) {
      for (const m of code(readFileSync(file, 'utf8')).matchAll(EXPORT)) {
        const entry = `${path.relative(repoRoot, file)} ${m[1]}`;
        if ((counts.get(m[1]) ?? 0) <= 1 && !(entry in ENTRY_POINTS)) dead.push(entry);
      }
    }
  }
  return dead;
}

test('the scan sees the exports and their uses (a self-check: it would pass vacuously otherwise)', (t) => {
  const counts = identifierCounts();
  t.true((counts.get('DomainError') ?? 0) > 10, 'a name used in many files is counted in each');
  t.is(code('/** aSample */\n// aSample\nconst x = 1;').includes('aSample'), false, 'comments are not uses');
  const exported = [...code(readFileSync(path.join(repoRoot, 'shared/errors.ts'), 'utf8')).matchAll(EXPORT)].map((m) => m[1]);
  t.true(exported.includes('DomainError') && exported.includes('refusal') && exported.includes('ErrorCode'));
});

test('every exported name is used somewhere (a dead export is deleted, not kept)', (t) => {
  t.deepEqual(deadExports(), []);
});
