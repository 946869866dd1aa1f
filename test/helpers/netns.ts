/**
 * Private networks for tests: a network namespace joined to the host by a veth pair, so that what listens on the
 * namespace's loopback is out of the host's reach (the edge cannot connect to it), while processes inside can dial
 * the host's side of the veth. Names carry a prefix and the test process's pid; everything is removed by
 * `remove()` (call it from t.teardown / test.after.always) and namespaces of dead test processes are swept first.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
let counter = 0;

export interface PrivateNetwork {
  name: string;
  /** The host's address on the veth (what processes inside dial to reach the host). */
  hostIp: string;
  /** The namespace's address on the veth. */
  nsIp: string;
  /** Takes the host's side of the veth down (`false`: every packet between the two is lost, silently) or up again. */
  link(up: boolean): Promise<void>;
  /** Starts a process inside the namespace. */
  spawn(command: string, args: string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }): ChildProcess;
  remove(): Promise<void>;
}

async function ip(...args: string[]): Promise<void> {
  await run('ip', args);
}

/** Removes namespaces with `prefix` left by test processes that no longer run. */
async function sweep(prefix: string): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list']).catch(() => ({ stdout: '' }));
  for (const line of stdout.split('\n')) {
    const match = new RegExp(`^(${prefix}-(\\d+)-\\d+)`).exec(line.trim());
    if (!match) continue;
    const pid = Number(match[2]);
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) await ip('netns', 'del', match[1]).catch(() => undefined);
  }
}

/** A namespace with loopback up and a /30 on a veth to the host, from 10.231.0.0/16 (by pid and counter). */
export async function privateNetwork(prefix = 'ehag'): Promise<PrivateNetwork> {
  await sweep(prefix);
  const n = counter++;
  const name = `${prefix}-${process.pid}-${n}`;
  const index = (process.pid * 8 + n) % 16384;
  const base = `10.231.${index >> 6}.${(index & 63) * 4}`;
  const [a, b, c] = base.split('.');
  const last = Number(base.split('.')[3]);
  const hostIp = `${a}.${b}.${c}.${last + 1}`;
  const nsIp = `${a}.${b}.${c}.${last + 2}`;
  const tag = `${(process.pid % 100000).toString(36)}${n}`;
  const hostIf = `eh${tag}h`.slice(0, 15);
  const nsIf = `eh${tag}n`.slice(0, 15);
  await ip('netns', 'add', name);
  try {
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    await ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    await ip('link', 'set', nsIf, 'netns', name);
    await ip('addr', 'add', `${hostIp}/30`, 'dev', hostIf);
    await ip('link', 'set', hostIf, 'up');
    await ip('-n', name, 'addr', 'add', `${nsIp}/30`, 'dev', nsIf);
    await ip('-n', name, 'link', 'set', nsIf, 'up');
  } catch (err) {
    await ip('link', 'del', hostIf).catch(() => undefined);
    await ip('netns', 'del', name).catch(() => undefined);
    throw err;
  }
  const children = new Set<ChildProcess>();
  return {
    name,
    hostIp,
    nsIp,
    link: (up) => ip('link', 'set', hostIf, up ? 'up' : 'down'),
    spawn(command, args, options = {}) {
      const child = spawn('ip', ['netns', 'exec', name, command, ...args], {
        env: options.env ?? process.env,
        cwd: options.cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      child.once('exit', () => children.delete(child));
      return child;
    },
    async remove() {
      for (const child of children) child.kill('SIGKILL');
      await ip('link', 'del', hostIf).catch(() => undefined);
      await ip('netns', 'del', name).catch(() => undefined);
    },
  };
}
