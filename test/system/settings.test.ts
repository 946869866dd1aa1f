/**
 * One home for settings: the environment is read only by shared/settings.ts, every setting has a description, and
 * docs/configuration.md is what the schema says (generated; this test fails when someone edits one and not the other).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { configurationPage, CONFIGURATION_PAGE } from '../../scripts/docs-settings.js';
import { ConfigError, readSettings, setting } from '../../shared/settings.js';
import { repoRoot } from '../helpers/repo.js';

const root = repoRoot;

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* sources(full);
    else if (/\.(ts|js|mjs)$/.test(name)) yield full;
  }
}

test('no code reads the environment except shared/settings.ts (handing the whole environment to a child is fine)', (t) => {
  const reads: string[] = [];
  for (const top of ['api', 'shared', 'domain', 'workers', 'edge', 'scripts']) {
    for (const file of sources(path.join(root, top))) {
      const rel = path.relative(root, file);
      if (rel === 'shared/settings.ts') continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/process\.env\s*(\.|\[|\?\.)/.test(line)) reads.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
  }
  t.deepEqual(reads, []);
});

test('docs/configuration.md is generated from the schema and matches it', (t) => {
  const page = readFileSync(path.join(root, CONFIGURATION_PAGE), 'utf8');
  t.is(page, configurationPage(page), 'run `npm run docs:settings` and commit the page');
});

test('every HUB_ variable the docs mention is a setting', (t) => {
  const page = readFileSync(path.join(root, CONFIGURATION_PAGE), 'utf8');
  const documented = new Set([...page.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]));
  const unknown: string[] = [];
  for (const name of readdirSync(path.join(root, 'docs'))) {
    const text = readFileSync(path.join(root, 'docs', name), 'utf8');
    for (const m of text.matchAll(/\bHUB_[A-Z0-9_]*[A-Z0-9]\b/g)) if (!documented.has(m[0])) unknown.push(`docs/${name}: ${m[0]}`);
  }
  t.deepEqual([...new Set(unknown)], []);
});

test('a bad value stops with a message naming the variable; blank numbers mean the default', (t) => {
  const err = t.throws(() => readSettings({ PORT: 'eighty', HUB_EDGE_FLUSH_MS: '5', HUB_TRUST_PROXY: 'maybe' }));
  t.true(err instanceof ConfigError);
  t.regex(err!.message, /PORT/);
  t.regex(err!.message, /HUB_EDGE_FLUSH_MS/);
  t.regex(err!.message, /HUB_TRUST_PROXY/);
  const s = readSettings({ PORT: '', HUB_JOB_LOCK_MS: ' ', HUB_TRUST_PROXY: 'true' });
  t.is(s.PORT, 8080);
  t.is(s.HUB_JOB_LOCK_MS, 8000);
  t.true(s.HUB_TRUST_PROXY);
  t.is(setting('HUB_LOG_FILE_LEVEL', { HUB_LOG_FILE_LEVEL: 'nonsense' }), 'debug', 'one setting alone falls back to its default');
});
