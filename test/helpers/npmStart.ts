/**
 * `npm start` as a user runs it, for tests: in a process group of its own (as a terminal runs it), with its own
 * embedded PostgreSQL and redis-server in a fresh data folder. What it started is killed when the test file ends.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestFn } from 'ava';
import { freePort } from '../../scripts/services/index.js';
import { registerSecret } from './logScan.js';
import { pidAlive, spawnScript, type Spawned } from './processes.js';

const runs: Spawned[] = [];
const pids: number[] = [];

/** Kills whatever `startHub` started and is still running when the file's tests end (a failed run). */
export function cleanUpHubs(test: TestFn): void {
  test.after.always(() => {
    for (const run of runs) if (run.child.pid && pidAlive(run.child.pid)) process.kill(-run.child.pid, 'SIGKILL');
    for (const pid of pids) if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
  });
}

export interface Run {
  start: Spawned;
  dataDir: string;
  port: number;
  edgePort: number;
  adminToken: string;
  /** The pids of what it started: the children, PostgreSQL and redis-server. */
  started: number[];
}

/** `npm start` in a process group of its own (as a terminal runs it), with its own PostgreSQL and redis-server (in a fresh data folder, or `dataDir`). */
export async function startHub(options: { edgeWorkers?: number; metricsBase?: number; dataDir?: string } = {}): Promise<Run> {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'ctrl-c-'));
  chmodSync(dataDir, 0o755); // the postgres user must reach the data dir
  const port = await freePort();
  const edgePort = await freePort();
  const adminToken = randomBytes(24).toString('base64url');
  registerSecret('admin token', adminToken);
  // a TCP share range of its own: npm start claims its range, and test files start stacks side by side
  const tcpPort = String(await freePort());
  const start = spawnScript(
    'scripts/start.ts',
    {
      // its own embedded PostgreSQL and redis-server, as with no configuration
      DATABASE_URL: undefined,
      REDIS_URL: undefined,
      HUB_DATA_DIR: dataDir,
      HUB_ADMIN_TOKEN: adminToken,
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      HUB_EDGE_HTTP_PORT: String(edgePort),
      HUB_EDGE_HTTPS_PORT: '0',
      HUB_EDGE_TCP_PORTS: `${tcpPort}-${tcpPort}`,
      HUB_METRICS_PORT: options.metricsBase === undefined ? undefined : String(options.metricsBase),
      HUB_EDGE_WORKERS: options.edgeWorkers === undefined ? undefined : String(options.edgeWorkers),
      // no periodic flush: only the one at shutdown can store the counters
      HUB_EDGE_FLUSH_MS: '3600000',
      // PostgreSQL's own log lines in the output
      HUB_DEBUG_SERVICES: '1',
    },
    { detached: true },
  );
  runs.push(start);
  pids.push(Number((await start.waitForLine(/PostgreSQL started \(pid (\d+)/, 'PostgreSQL', 120_000))[1]));
  pids.push(Number((await start.waitForLine(/redis-server started \(pid (\d+)/, 'redis-server'))[1]));
  for (let i = 1; i <= (options.edgeWorkers ?? 1); i++) {
    const label = (options.edgeWorkers ?? 1) > 1 ? `edge\\.${i}` : 'edge';
    await start.waitForLine(new RegExp(`${label} started \\(pid \\d+`), `the edge (${label})`, 120_000);
  }
  const started = [...start.output().matchAll(/started \(pid (\d+)/g)].map((m) => Number(m[1]));
  pids.push(...started);
  return { start, dataDir, port, edgePort, adminToken, started };
}
