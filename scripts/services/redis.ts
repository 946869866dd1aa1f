/**
 * A redis-server of our own on a free loopback port, in a session of its own (servers.ts). With a password, it is
 * given in a configuration file of mode 0600 (never on the command line, which every local user can read) and the
 * URL carries it.
 */
import net from 'node:net';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { setting } from '../../shared/settings.js';
import { ensureCommands, REDIS_SERVER, which } from './packages.js';
import { freePort } from './ports.js';
import { spawnServer, stopServer } from './servers.js';

export interface LocalRedis {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startRedis(dir: string | undefined, port?: number, password?: string): Promise<LocalRedis> {
  ensureCommands([REDIS_SERVER]);
  const bin = which('redis-server')!;
  port ??= await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--protected-mode', 'yes'];
  // bounded, and never evicting: queue data must not go (inspection is bounded well under it: docs/operating.md)
  args.push('--maxmemory', setting('HUB_REDIS_MAXMEMORY'), '--maxmemory-policy', 'noeviction');
  if (dir) {
    mkdirSync(dir, { recursive: true });
    args.push('--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec');
  } else {
    args.push('--appendonly', 'no');
  }
  if (password) {
    if (!dir) throw new Error('a redis-server with a password needs a folder for its configuration file');
    // the configuration file comes first on redis-server's command line; the options after it add to it
    const file = path.join(dir, 'redis-auth.conf');
    writeFileSync(file, `requirepass ${password}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    args.unshift(file);
  }
  const child = spawnServer(bin, args, { stopSignal: 'SIGTERM' });
  let output = '';
  child.stdout?.on('data', (d) => (output = (output + d).slice(-4000)));
  child.stderr?.on('data', (d) => (output = (output + d).slice(-4000)));
  const started = new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + 15_000;
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`redis-server exited: ${output}`));
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.write('PING\r\n');
        socket.once('data', () => {
          socket.destroy();
          resolve();
        });
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`redis-server did not start: ${output}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
  await started.catch(async (err) => {
    await stopServer(child, 'SIGTERM');
    throw err;
  });
  return {
    url: password ? `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`,
    port,
    process: child,
    stop: () => stopServer(child, 'SIGTERM'),
  };
}
