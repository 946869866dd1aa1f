/**
 * `npm run start:ha`: a high-availability set-up on one machine, to try failover with: PostgreSQL with a synchronous
 * standby behind one moving address, Redis with a replica and three sentinels (scripts/services/haStores.ts), and two
 * nodes, each a whole service (web, worker, clock, edge) run by `npm start` against those stores on ports of its own.
 * It prints every address. Its data is made fresh at each start under `$HUB_DATA_DIR/ha` (a standby is made from the
 * primary, and a promoted one is not turned back). Ctrl-C stops everything. docs/operating.md, "High availability",
 * says how the same set-up looks on real machines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { config, ConfigError } from '../shared/config.js';
import { isMain } from '../shared/shutdown.js';
import { type HaStores, startHaStores } from './services/haStores.js';

interface HaNode {
  name: string;
  port: number;
  edgeHttpPort: number;
  edgeHttpsPort: number;
  process: ChildProcess;
}

/** The ports of node `i` (0, 1): the configured ones, then one up per node; the TCP share range split in two. */
function nodePorts(i: number, base: { port: number; edgeHttp: number; edgeHttps: number; tcpFrom: number; tcpTo: number }) {
  const half = Math.floor((base.tcpTo - base.tcpFrom + 1) / 2);
  return {
    port: base.port + i,
    edgeHttp: base.edgeHttp + i,
    edgeHttps: base.edgeHttps + i,
    tcpFrom: base.tcpFrom + i * half,
    tcpTo: base.tcpFrom + (i + 1) * half - 1,
  };
}

/** What one node of the pair is given: the stores, its own data directory and ports, the settings both share. */
export function nodeEnv(
  stores: Record<string, string>,
  node: {
    dataDir: string;
    adminToken: string;
    secretKeyHex: string;
    port: number;
    publicBaseUrl?: string;
    edgeHttp: number;
    edgeHttps: number;
    tcpFrom: number;
    tcpTo: number;
  },
): Record<string, string> {
  return {
    ...stores,
    HUB_DATA_DIR: node.dataDir,
    HUB_ADMIN_TOKEN: node.adminToken,
    HUB_SECRET_KEY: node.secretKeyHex,
    PORT: String(node.port),
    PUBLIC_BASE_URL: node.publicBaseUrl ?? `http://127.0.0.1:${node.port}`,
    HUB_EDGE_HTTP_PORT: String(node.edgeHttp),
    HUB_EDGE_HTTPS_PORT: String(node.edgeHttps),
    HUB_EDGE_TCP_PORTS: `${node.tcpFrom}-${node.tcpTo}`,
    // agents reach this node's edge at its TLS port
    HUB_EDGE_AGENT_ADDRESSES: `127.0.0.1:${node.edgeHttps}`,
    HUB_METRICS_PORT: '',
  };
}

/** Starts one node (`npm start` with the stores given: it starts none of its own) in a process group of its own. */
export function startNode(
  name: string,
  env: Record<string, string>,
  log: (line: string) => void,
  args = ['--import', 'tsx', 'scripts/start.ts'],
): ChildProcess {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (line) => log(`[${name}] ${line}`));
  return child;
}

async function main(): Promise<void> {
  let cfg;
  try {
    cfg = config();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`edgehub: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const dir = path.resolve(cfg.dataDir, 'ha');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const log = (line: string) => console.error(line);
  let stores: HaStores | undefined;
  const nodes: HaNode[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) process.exit(code);
    stopping = true;
    for (const n of nodes) if (n.process.exitCode === null) process.kill(-n.process.pid!, 'SIGTERM');
    await Promise.all(nodes.map((n) => (n.process.exitCode === null ? new Promise((r) => n.process.once('exit', r)) : undefined)));
    await stores?.stop();
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));

  try {
    console.error('edgehub: starting PostgreSQL (primary + synchronous standby) and Redis (master + replica + 3 sentinels) ...');
    stores = await startHaStores(path.join(dir, 'stores'), { log: (line) => log(`edgehub: ${line}`) });
    const base = { port: cfg.port, edgeHttp: cfg.edge.httpPort, edgeHttps: cfg.edge.httpsPort, tcpFrom: cfg.edge.tcpPorts.from, tcpTo: cfg.edge.tcpPorts.to };
    for (let i = 0; i < 2; i++) {
      const name = `node-${i + 1}`;
      const p = nodePorts(i, base);
      const env = {
        ...nodeEnv(stores.env, {
          ...p,
          dataDir: path.join(dir, name),
          adminToken: cfg.adminToken,
          secretKeyHex: cfg.secretKey.toString('hex'),
          publicBaseUrl: cfg.publicBaseUrl,
        }),
        HUB_PUBLIC_FRONTEND_TEMPLATE: cfg.edge.publicFrontendTemplate,
      };
      nodes.push({ name, port: p.port, edgeHttpPort: p.edgeHttp, edgeHttpsPort: p.edgeHttps, process: startNode(name, env, log) });
      // the first node migrates the database before the second starts against it
      if (i === 0) await waitForHealth(p.port, 180_000);
    }
    await waitForHealth(nodes[1].port, 180_000);
    const pg = stores.postgres;
    console.log('\nedgehub (high availability, on one machine) is up:');
    console.log(
      `  PostgreSQL  primary 127.0.0.1:${pg.primary.port}, synchronous standby 127.0.0.1:${pg.standby.port}, moving address 127.0.0.1:${stores.relay.port}`,
    );
    console.log(
      `  Redis       master and replica ${stores.redis.nodes.map((n) => `127.0.0.1:${n.port}`).join(', ')}; sentinels ${stores.redis.sentinelList} (master name ${stores.redis.name})`,
    );
    for (const n of nodes)
      console.log(
        `  ${n.name}      API http://localhost:${n.port}  edge http://localhost:${n.edgeHttpPort} https://localhost:${n.edgeHttpsPort}  (pid ${n.process.pid}, its own process group)`,
      );
    console.log(`  admin token ${cfg.adminToken}`);
    console.log(
      "  faults to try: kill -9 the PostgreSQL primary (the standby is promoted and the address moves), the Redis master (Sentinel promotes the replica), or a node's process group (kill -9 -PID)\n",
    );
  } catch (err) {
    console.error(`edgehub: start:ha failed: ${err instanceof Error ? err.message : String(err)}`);
    await stop(1);
  }
}

async function waitForHealth(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the node on port ${port} did not answer /healthz 200 within ${ms / 1000} s`);
}

if (isMain(import.meta.url)) await main();
