/**
 * Redis with Sentinel on one machine: a master, a replica of it and three sentinels watching them, each a
 * redis-server of its own on a free loopback port (Sentinel is the same binary with `--sentinel`). For the tests of
 * failover and for a local high-availability set-up; on real machines each would run on a machine of its own.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { ensureCommands, REDIS_SERVER, which } from './packages.js';
import { freePort } from './ports.js';
import { spawnServer, stopServer } from './servers.js';

interface RedisNode {
  port: number;
  process: ChildProcess;
}

export interface RedisWithSentinels {
  /** The master's name at the sentinels. */
  name: string;
  /** `host:port,host:port,host:port`: the value of REDIS_SENTINELS. */
  sentinelList: string;
  sentinels: RedisNode[];
  /** The nodes that hold data, the first master at the start. */
  nodes: RedisNode[];
  /** The port of the node the sentinels name as master now. */
  masterPort(): Promise<number>;
  /** SIGKILLs the node that is master now and waits until the sentinels name another; returns the new master's port. */
  killMaster(): Promise<{ killed: number; promoted: number; seconds: number }>;
  /** A failover asked of the sentinels (the master lives on, demoted to a replica); waits until another is master and the old one replicates it. */
  failover(): Promise<{ demoted: number; promoted: number }>;
  stop(): Promise<void>;
}

async function call<T>(port: number, ...args: string[]): Promise<T> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.call(args[0], ...args.slice(1))) as T;
  } finally {
    client.disconnect();
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`redis with sentinels: ${what} not within ${timeoutMs} ms${last ? ` (${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function serve(args: string[]): ChildProcess {
  return spawnServer(which('redis-server')!, args, { stopSignal: 'SIGTERM' });
}

/** Starts a master, a replica and three sentinels (quorum 2) in `dir`, and waits until the sentinels see all of them. */
export async function startRedisWithSentinels(dir: string, options: { name?: string; downAfterMs?: number } = {}): Promise<RedisWithSentinels> {
  ensureCommands([REDIS_SERVER]);
  const name = options.name ?? 'mymaster';
  mkdirSync(dir, { recursive: true });
  // a folder per server: a full synchronisation writes the master's snapshot (dump.rdb) to the server's folder, which
  // would otherwise be the working directory, and a server started again loads what its folder holds
  const data = (port: number) => {
    const own = path.join(dir, `redis-${port}`);
    mkdirSync(own, { recursive: true });
    return ['--port', String(port), '--bind', '127.0.0.1', '--dir', own, '--save', '', '--appendonly', 'no'];
  };
  const masterPort = await freePort();
  const nodes: RedisNode[] = [{ port: masterPort, process: serve(data(masterPort)) }];
  await until('the master answering', async () => ((await call<string>(masterPort, 'PING')) === 'PONG' ? true : undefined));
  const replicaPort = await freePort();
  nodes.push({ port: replicaPort, process: serve([...data(replicaPort), '--replicaof', '127.0.0.1', String(masterPort)]) });
  await until('the replica in sync', async () =>
    (await call<string>(replicaPort, 'INFO', 'replication')).includes('master_link_status:up') ? true : undefined,
  );

  const sentinels: RedisNode[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    // a sentinel rewrites its configuration file: one of its own
    const conf = path.join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1000}`,
        `sentinel failover-timeout ${name} 10000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    sentinels.push({ port, process: serve([conf, '--sentinel']) });
  }
  // every sentinel knows the replica and the two other sentinels: a failover can be agreed on
  for (const s of sentinels) {
    await until(`sentinel ${s.port} seeing the replica and its peers`, async () => {
      const replicas = await call<unknown[]>(s.port, 'SENTINEL', 'replicas', name);
      const peers = await call<unknown[]>(s.port, 'SENTINEL', 'sentinels', name);
      return replicas.length >= 1 && peers.length >= 2 ? true : undefined;
    });
  }

  const masterNow = async () => {
    for (const s of sentinels) {
      try {
        const [, port] = await call<[string, string]>(s.port, 'SENTINEL', 'get-master-addr-by-name', name);
        return Number(port);
      } catch {
        // ask the next one
      }
    }
    throw new Error('no sentinel answers');
  };

  return {
    name,
    sentinelList: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
    sentinels,
    nodes,
    masterPort: masterNow,
    async killMaster() {
      const killed = await masterNow();
      const node = nodes.find((n) => n.port === killed)!;
      const at = Date.now();
      node.process.kill('SIGKILL');
      const promoted = await until(
        'a new master',
        async () => {
          const port = await masterNow();
          if (port === killed) return undefined;
          return (await call<string>(port, 'INFO', 'replication')).includes('role:master') ? port : undefined;
        },
        60_000,
      );
      return { killed, promoted, seconds: (Date.now() - at) / 1000 };
    },
    async failover() {
      const demoted = await masterNow();
      await call(sentinels[0].port, 'SENTINEL', 'FAILOVER', name);
      const promoted = await until(
        'the failover asked for',
        async () => {
          const port = await masterNow();
          if (port === demoted) return undefined;
          return (await call<string>(port, 'INFO', 'replication')).includes('role:master') ? port : undefined;
        },
        60_000,
      );
      // settled: the sentinels have made the old master a replica of the new one (they look every few seconds)
      await until(
        'the old master a replica',
        async () => ((await call<string>(demoted, 'INFO', 'replication')).includes('master_link_status:up') ? true : undefined),
        60_000,
      );
      return { demoted, promoted };
    },
    async stop() {
      await Promise.all([...sentinels, ...nodes].map((n) => stopServer(n.process, 'SIGTERM')));
    },
  };
}
