/**
 * The repository's own directory, for tests that read its files (sources, docs, the agent package). `npm test` runs
 * the test files from a compiled tree of links (scripts/testBuild.ts); following a link back finds the original.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.dirname(realpathSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../tsconfig.json')));
