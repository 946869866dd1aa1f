/**
 * The node arguments that run one of the repository's scripts in a process of its own, from the directory the tests
 * run in: its compiled `.js` when the tests run from the compiled tree (scripts/testBuild.ts; no TypeScript loader to
 * start), `--import tsx` and the source otherwise.
 */
const compiled = import.meta.url.endsWith('.js');

export function scriptArgs(file: string, ...args: string[]): string[] {
  return compiled ? [file.replace(/\.ts$/, '.js'), ...args] : ['--import', 'tsx', file, ...args];
}
