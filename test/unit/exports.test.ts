/**
 * No export that no other file imports: a name only its own file uses is declared without `export` (the keyword
 * would tell a reader that something else depends on it, and it hides the name from the linters' unused checks).
 * Imports are read from the TypeScript compiler's syntax trees (test/helpers/exportUses.ts). A name nothing uses at
 * all is test/system/dead-exports.test.ts's to find.
 */
import path from 'node:path';
import test from 'ava';
import { unimportedExports } from '../helpers/exportUses.js';
import { repoRoot } from '../helpers/repo.js';

/** Where exports are looked for. */
const SOURCES = ['api', 'edge', 'shared', 'domain', 'workers', 'scripts', 'agent'];
/** Where an import counts: the sources, and what runs them from outside. */
const USERS = [...SOURCES, 'test', 'bench'];
/** Exports that something other than an import takes, each with why. */
const ENTRY_POINTS: { file: RegExp; names: string[]; why: string }[] = [
  { file: /^domain\/migrations\/\d{4}-[\w-]+\.ts$/, names: ['up', 'down'], why: 'umzug loads each migration by its file name and calls these' },
];

const entryPoint = (file: string, name: string) => ENTRY_POINTS.some((e) => e.file.test(file) && e.names.includes(name));
/** The scan (a few seconds: it starts the compiler and reads every file), once for both tests. */
let scanned: ReturnType<typeof unimportedExports> | undefined;
const scan = () => (scanned ??= unimportedExports(repoRoot, SOURCES, USERS));

test('every export is imported by another file (one only its own file uses is declared without `export`)', (t) => {
  const unimported = scan()
    .filter((d) => !entryPoint(d.file, d.name))
    .map((d) => `${d.file} ${d.name}`);
  t.deepEqual(unimported, []);
});

test('the check sees imports of every kind (a self-check: it would pass vacuously otherwise)', (t) => {
  const all = new Set(scan().map((d) => `${d.file} ${d.name}`));
  // the migrations' entry points are seen as unimported: the scan does find exports no file imports
  t.true([...all].some((e) => /^domain\/migrations\/\S+ up$/.test(e)));
  // a named import, a namespace import read as `c.Name`, a package export, a re-export and a type import count
  for (const [file, name] of [
    ['shared/errors.ts', 'DomainError'],
    ['api/openapi/components/hubs.ts', 'Hub'],
    ['agent/lib/protocol.js', 'AGENT_ALPN'],
    ['agent/lib/backoff.js', 'backoffMs'],
    ['api/openapi/operation.ts', 'Operation'],
  ]) {
    t.false(all.has(`${path.normalize(file)} ${name}`), `${file} ${name} is imported`);
  }
});
