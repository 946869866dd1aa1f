/**
 * The agent package's version, as its package.json says (test/system/agent-cli.test.ts checks that they agree). A
 * module rather than a JSON import: Node 20 before 20.10 cannot import JSON with `with`, and the single executable
 * has no package.json beside it.
 */
export const VERSION = '0.1.0';
