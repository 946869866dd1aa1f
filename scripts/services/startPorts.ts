/**
 * The ports `npm start` will listen on, checked before it writes or starts anything: PORT, the edge's listeners,
 * the metrics port, and the TCP share range (HUB_EDGE_TCP_PORTS), whose ports the edge binds one by one as TCP shares
 * appear. A second stack on one machine with the same range would collide there only later, and silently (the edge
 * logs that it cannot bind a share's port); so the range is also claimed for as long as this `npm start` runs, with
 * an abstract Unix socket named after it (per network namespace, like the ports; gone with the process, even when
 * it is SIGKILLed).
 */
import net from 'node:net';
import type { SettingsValues } from '../../shared/settings.js';
import { portTaken } from './ports.js';

type Range = { from: number; to: number };

/** Ports of the range another program holds: checked in batches (each socket closed at once), the first few named. */
async function takenInRange({ from, to }: Range): Promise<number[]> {
  const taken: number[] = [];
  for (let start = from; start <= to && taken.length < 3; start += 100) {
    const batch = Array.from({ length: Math.min(100, to - start + 1) }, (_, i) => start + i);
    const results = await Promise.all(batch.map((port) => portTaken(port)));
    taken.push(...batch.filter((_, i) => results[i]));
  }
  return taken.slice(0, 3);
}

const claimName = ({ from, to }: Range) => `\0edgehub-tcp-ports-${from}-${to}`;

/** The pid of the `npm start` holding the claim on `range` (it writes its pid to whoever connects), or undefined. */
function claimHolder(range: Range): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ path: claimName(range) });
    let pid = '';
    socket.setTimeout(2_000, () => socket.destroy());
    socket.on('data', (chunk) => (pid += chunk.toString()));
    socket.on('error', () => resolve(undefined));
    socket.on('close', () => resolve(pid.trim() || 'unknown'));
  });
}

/** Claims `range` for this process's life; false when another process holds the claim. */
function claim(range: Range): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer((socket) => socket.end(`${process.pid}\n`));
    server.once('error', () => resolve(false));
    server.listen({ path: claimName(range) }, () => {
      server.unref();
      resolve(true);
    });
  });
}

/** Why `npm start` cannot use its ports (one line), or undefined once they are checked and the TCP range claimed. */
export async function checkStartPorts(e: SettingsValues): Promise<string | undefined> {
  const wanted: [number | undefined, string][] = [
    [e.PORT, 'PORT'],
    [e.HUB_EDGE_HTTP_PORT, 'HUB_EDGE_HTTP_PORT'],
    [e.HUB_EDGE_HTTPS_PORT, 'HUB_EDGE_HTTPS_PORT'],
    [e.HUB_METRICS_PORT, 'HUB_METRICS_PORT'],
  ];
  for (const [port, variable] of wanted) {
    if (port && (await portTaken(port))) return `port ${port} (${variable}) is already in use by another program: stop it, or set ${variable} to a free port`;
  }
  const range = e.HUB_EDGE_TCP_PORTS;
  const shown = `${range.from}-${range.to}`;
  if (process.platform === 'linux' && !(await claim(range))) {
    const pid = await claimHolder(range);
    return `HUB_EDGE_TCP_PORTS ${shown} (the ports of TCP shares) is already used by another edgehub on this machine${pid ? ` (npm start, pid ${pid})` : ''}: stop it, or set HUB_EDGE_TCP_PORTS to another range, such as 21000-21999`;
  }
  const taken = await takenInRange(range);
  if (taken.length)
    return `port${taken.length > 1 ? 's' : ''} ${taken.join(', ')} of HUB_EDGE_TCP_PORTS ${shown} (the ports of TCP shares) ${taken.length > 1 ? 'are' : 'is'} already in use by another program: stop it, or set HUB_EDGE_TCP_PORTS to a free range`;
  return undefined;
}
